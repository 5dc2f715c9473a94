//! The capabilities `lwt6 run` needs, checked before it starts: any user may run it with them (root has them
//! all). Found by running the router as `nobody` with one capability taken away at a time (docs/install.md,
//! *Capabilities*):
//!
//! | capability | needed for |
//! |---|---|
//! | `CAP_NET_RAW` | `socket(AF_PACKET)` and `socket(AF_XDP)`: always |
//! | `CAP_NET_ADMIN` | AF_XDP: loading an XDP program and attaching it to the interfaces |
//! | `CAP_BPF` | AF_XDP: creating the BPF maps (the XSK map) and loading the program |
//! | `CAP_IPC_LOCK` | AF_XDP: registering the UMEM, locked memory beyond `RLIMIT_MEMLOCK` (not needed when that limit is unlimited) |
//!
//! `CAP_SYS_ADMIN` stands in for `CAP_NET_ADMIN` and `CAP_BPF` in the kernel's checks, so a process with it passes
//! too; it is never needed. `--kernel-routes` (an rtnetlink dump and subscription) needs none.

/// A capability `lwt6 run` may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `CAP_NET_ADMIN` (12).
    NetAdmin,
    /// `CAP_NET_RAW` (13).
    NetRaw,
    /// `CAP_IPC_LOCK` (14).
    IpcLock,
    /// `CAP_SYS_ADMIN` (21).
    SysAdmin,
    /// `CAP_BPF` (39).
    Bpf,
}

impl Cap {
    /// The capability's number (linux/capability.h).
    pub fn bit(self) -> u32 {
        match self {
            Cap::NetAdmin => 12,
            Cap::NetRaw => 13,
            Cap::IpcLock => 14,
            Cap::SysAdmin => 21,
            Cap::Bpf => 39,
        }
    }

    /// The capability's name, as capabilities(7) and systemd's `AmbientCapabilities=` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::NetRaw => "CAP_NET_RAW",
            Cap::IpcLock => "CAP_IPC_LOCK",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Bpf => "CAP_BPF",
        }
    }

    /// What lwt6 needs it for.
    pub fn why(self) -> &'static str {
        match self {
            Cap::NetRaw => "AF_PACKET and AF_XDP sockets",
            Cap::NetAdmin => "attaching the XDP program",
            Cap::Bpf => "the XDP program's BPF maps",
            Cap::IpcLock => "locking AF_XDP's UMEM in memory beyond RLIMIT_MEMLOCK",
            Cap::SysAdmin => "nothing lwt6 needs",
        }
    }
}

/// What the process holds: its effective capabilities and whether its locked-memory limit is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The effective set (`CapEff` of /proc/self/status), one bit per capability.
    pub effective: u64,
    /// `RLIMIT_MEMLOCK` is unlimited (/proc/self/limits).
    pub memlock_unlimited: bool,
}

impl Held {
    /// What this process holds (nothing, when /proc cannot be read).
    pub fn current() -> Held {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        Held {
            effective: cap_eff(&status).unwrap_or(0),
            memlock_unlimited: memlock_unlimited(&limits),
        }
    }

    /// Whether `c` is in the effective set.
    pub fn has(&self, c: Cap) -> bool {
        self.effective & (1 << c.bit()) != 0
    }

    /// The capabilities AF_PACKET ports lack.
    pub fn missing_for_packet(&self) -> Vec<Cap> {
        [Cap::NetRaw]
            .into_iter()
            .filter(|&c| !self.has(c))
            .collect()
    }

    /// The capabilities AF_XDP ports lack (`CAP_SYS_ADMIN` covering `CAP_NET_ADMIN` and `CAP_BPF`, an unlimited
    /// `RLIMIT_MEMLOCK` covering `CAP_IPC_LOCK`, as in the kernel's checks).
    pub fn missing_for_xdp(&self) -> Vec<Cap> {
        let admin = self.has(Cap::SysAdmin);
        let mut m = self.missing_for_packet();
        if !admin && !self.has(Cap::NetAdmin) {
            m.push(Cap::NetAdmin);
        }
        if !admin && !self.has(Cap::Bpf) {
            m.push(Cap::Bpf);
        }
        if !self.memlock_unlimited && !self.has(Cap::IpcLock) {
            m.push(Cap::IpcLock);
        }
        m
    }
}

/// What this process holds, or the [lasting](crate::Error::lasting) error naming what it lacks: for AF_XDP when
/// `xdp` (`--io xdp`), else for AF_PACKET (`--io packet`, and `--io auto`, which falls back to it).
pub fn check(xdp: bool) -> Result<Held, crate::Error> {
    let held = Held::current();
    let missing = if xdp {
        held.missing_for_xdp()
    } else {
        held.missing_for_packet()
    };
    if missing.is_empty() {
        Ok(held)
    } else {
        let what = if xdp { "--io xdp" } else { "AF_PACKET" };
        Err(crate::Error::lasting(refusal(&missing, what)))
    }
}

/// `Ok` when `held` has what AF_XDP needs; else why not, for `--io auto`'s fallback to AF_PACKET.
pub fn xdp_allowed(held: &Held) -> Result<(), String> {
    let m = held.missing_for_xdp();
    if m.is_empty() {
        Ok(())
    } else {
        Err(format!("lacking {}", describe(&m)))
    }
}

/// `missing` said in one phrase: `CAP_BPF (the XDP program's BPF maps) and CAP_IPC_LOCK (...)`.
pub fn describe(missing: &[Cap]) -> String {
    let each: Vec<String> = missing
        .iter()
        .map(|c| format!("{} ({})", c.name(), c.why()))
        .collect();
    match each.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The message for a router that cannot start for want of `missing`.
pub fn refusal(missing: &[Cap], what: &str) -> String {
    format!(
        "{what} needs the capabilit{} {}, which this process lacks: run lwt6 as root, or grant {} (systemd: \
         AmbientCapabilities=; by hand: setpriv --inh-caps --ambient-caps, or setcap on the binary; docs/install.md)",
        if missing.len() == 1 { "y" } else { "ies" },
        describe(missing),
        if missing.len() == 1 { "it" } else { "them" },
    )
}

/// The `CapEff:` line of /proc/PID/status, hexadecimal.
fn cap_eff(status: &str) -> Option<u64> {
    let v = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(v.trim(), 16).ok()
}

/// Whether the `Max locked memory` line of /proc/PID/limits has an unlimited soft limit.
fn memlock_unlimited(limits: &str) -> bool {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max locked memory"))
        .and_then(|rest| rest.split_whitespace().next())
        == Some("unlimited")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_numbers_are_the_kernels() {
        // linux/capability.h: CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_IPC_LOCK 14, CAP_SYS_ADMIN 21, CAP_BPF 39.
        // `capsh --decode=0x0000008000207000` prints these five.
        let all = [
            Cap::NetAdmin,
            Cap::NetRaw,
            Cap::IpcLock,
            Cap::SysAdmin,
            Cap::Bpf,
        ];
        let mask = all.iter().fold(0u64, |m, c| m | 1 << c.bit());
        assert_eq!(mask, 0x0000_0080_0020_7000);
    }

    #[test]
    fn proc_status_and_limits_are_read() {
        let status = "Name:\tlwt6\nCapInh:\t0000000000000000\nCapPrm:\t0000008000007000\nCapEff:\t0000008000003000\n";
        assert_eq!(cap_eff(status), Some(0x8000003000));
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max locked memory         8388608              8388608              bytes     \n";
        assert!(!memlock_unlimited(limits));
        let limits =
            "Max locked memory         unlimited            unlimited            bytes     \n";
        assert!(memlock_unlimited(limits));
    }

    #[test]
    fn what_each_io_needs() {
        let held = |caps: &[Cap], memlock_unlimited| Held {
            effective: caps.iter().fold(0, |m, c| m | 1 << c.bit()),
            memlock_unlimited,
        };
        let four = [Cap::NetRaw, Cap::NetAdmin, Cap::Bpf, Cap::IpcLock];
        assert!(held(&four, false).missing_for_xdp().is_empty());
        assert_eq!(held(&[], false).missing_for_packet(), vec![Cap::NetRaw]);
        assert!(held(&[Cap::NetRaw], false).missing_for_packet().is_empty());
        assert_eq!(
            held(&[Cap::NetRaw, Cap::NetAdmin, Cap::IpcLock], false).missing_for_xdp(),
            vec![Cap::Bpf]
        );
        assert_eq!(
            held(&[Cap::NetRaw, Cap::NetAdmin, Cap::Bpf], false).missing_for_xdp(),
            vec![Cap::IpcLock]
        );
        assert!(
            held(&[Cap::NetRaw, Cap::NetAdmin, Cap::Bpf], true)
                .missing_for_xdp()
                .is_empty()
        );
        assert!(
            held(&[Cap::NetRaw, Cap::SysAdmin, Cap::IpcLock], false)
                .missing_for_xdp()
                .is_empty()
        );
        let m = refusal(&[Cap::Bpf, Cap::IpcLock], "--io xdp");
        assert!(
            m.contains("CAP_BPF (") && m.contains(" and CAP_IPC_LOCK ("),
            "{m}"
        );
    }
}
