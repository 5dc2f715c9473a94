//! The interfaces a live router attaches to: the configuration's `link add` lines checked against the system
//! (MAC and MTU taken from it when a line omits them, a contradiction is an error naming the line and token),
//! and the kernel settings under which the kernel would do lwt6's work a second time.

use crate::{Error, fail};
use lwt6_dataplane::spec::Config;
use lwt6_io::netdev::{self, NetDev};
use lwt6_wire::ethernet::mac_text;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// The text of the given lines of `path` (only those: a large table is not held as text).
fn lines_of(path: &Path, wanted: &[usize]) -> HashMap<usize, String> {
    let mut out = HashMap::new();
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    for (i, l) in std::io::BufReader::new(f).lines().enumerate() {
        let Ok(l) = l else { break };
        if wanted.contains(&(i + 1)) {
            out.insert(i + 1, l);
        }
    }
    out
}

/// The token following keyword `kw` on a configuration line, if the line has it (comments cut).
fn value_of<'a>(line: &'a str, kw: &str) -> Option<&'a str> {
    let line = line.split('#').next().unwrap_or("");
    let mut it = line.split_whitespace();
    while let Some(t) = it.next() {
        if t == kw {
            return it.next();
        }
    }
    None
}

/// Looks every configured link up in the system and completes the configuration with what the system has:
/// a link without `address` takes the interface's MAC, one without `mtu` its MTU. A link the system does not have,
/// or one whose given MAC or MTU differs from the system's, is an error naming the line and token.
pub fn resolve(cfg: &mut Config, path: &Path) -> Result<Vec<NetDev>, Error> {
    let at = |line: usize, msg: String| fail(format!("{}: line {line}: {msg}", path.display()));
    let texts = lines_of(path, &cfg.links.iter().map(|l| l.line).collect::<Vec<_>>());
    let mut devs = Vec::new();
    for link in &mut cfg.links {
        let dev = netdev::lookup(&link.name).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                at(
                    link.line,
                    format!(
                        "'{}': no such interface in this network namespace (ip link show)",
                        link.name
                    ),
                )
            } else {
                at(link.line, format!("'{}': {e}", link.name))
            }
        })?;
        let text = texts.get(&link.line).map(String::as_str).unwrap_or("");
        match link.mac {
            Some(m) if m != dev.mac => {
                let tok = value_of(text, "address").unwrap_or("address");
                return Err(at(
                    link.line,
                    format!(
                        "'{tok}': {} has address {} in the system",
                        link.name,
                        mac_text(&dev.mac)
                    ),
                ));
            }
            _ => link.mac = Some(dev.mac),
        }
        match value_of(text, "mtu") {
            Some(tok) if link.mtu != dev.mtu => {
                return Err(at(
                    link.line,
                    format!("'{tok}': {} has mtu {} in the system", link.name, dev.mtu),
                ));
            }
            _ => link.mtu = dev.mtu,
        }
        devs.push(dev);
    }
    if devs.is_empty() {
        return Err(fail(format!(
            "{}: no `link add` line: nothing to attach to",
            path.display()
        )));
    }
    Ok(devs)
}

fn read_sysctl(key: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
        .ok()
        .map(|s| s.trim().to_string())
}

/// What would make the kernel duplicate lwt6's work on the attached interfaces when frames reach both (AF_PACKET
/// receives a copy; the kernel still gets the original): forwarding enabled in the namespace, kernel addresses on
/// an attached interface (it would answer neighbour solicitations and pings), or an interface that is down.
/// Each problem comes with the command that fixes it.
pub fn kernel_conflicts(devs: &[NetDev]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if read_sysctl("net.ipv6.conf.all.forwarding").as_deref() == Some("1") {
        out.push((
            "the kernel forwards IPv6 in this namespace".into(),
            "sysctl -w net.ipv6.conf.all.forwarding=0".into(),
        ));
    }
    if read_sysctl("net.ipv4.ip_forward").as_deref() == Some("1") {
        out.push((
            "the kernel forwards IPv4 in this namespace".into(),
            "sysctl -w net.ipv4.ip_forward=0".into(),
        ));
    }
    for d in devs {
        if !d.up {
            out.push((
                format!("{} is down", d.name),
                format!("ip link set {} up", d.name),
            ));
        }
        // IPv6 enabled is enough: an interface without addresses yet gets a link-local one when its carrier
        // comes up, and the kernel then answers on it.
        // (The interface's directory under /proc/sys keeps the dots of its name, e.g. a VLAN's `eth0.100`;
        // sysctl(8) writes those dots as slashes.)
        let enabled =
            std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", d.name))
                .is_ok_and(|v| v.trim() != "1");
        if enabled || !d.ipv6.is_empty() {
            let shown: Vec<String> = d.ipv6.iter().map(|a| a.to_string()).collect();
            let what = if shown.is_empty() {
                format!(
                    "IPv6 is enabled on {} (the kernel would take addresses on it)",
                    d.name
                )
            } else {
                format!(
                    "the kernel has IPv6 addresses on {} ({})",
                    d.name,
                    shown.join(", ")
                )
            };
            out.push((
                what,
                format!(
                    "sysctl -w net.ipv6.conf.{}.disable_ipv6=1",
                    d.name.replace('.', "/")
                ),
            ));
        }
        if d.has_ipv4 {
            out.push((
                format!("the kernel has an IPv4 address on {}", d.name),
                format!("ip -4 addr flush dev {}", d.name),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_after_keyword() {
        assert_eq!(
            value_of("link add r0 address 02:00:00:00:00:01 mtu 9000", "mtu"),
            Some("9000")
        );
        assert_eq!(value_of("link add r0 # mtu 9000", "mtu"), None);
        assert_eq!(value_of("link add r0", "address"), None);
    }
}
