//! `show interfaces [-j]`: per interface its MTU and MAC, and per port (socket) its I/O mode: AF_XDP (the XDP
//! program's mode, native or generic; zero-copy or copy; the receive queue and the worker serving it; ring and
//! frame sizes) or AF_PACKET (the worker, the fanout mode, the receive buffer asked for).

use lwt6_dataplane::snapshot::Snapshot;
use lwt6_io::afpacket::AfPacketOptions;
use lwt6_io::afxdp::XskPort;
use lwt6_wire::ethernet::mac_text;
use serde_json::{Value, json};

/// One port (socket) of the running router, as `show interfaces` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// Its interface (device index in the configuration).
    pub dev: usize,
    /// The worker that serves it.
    pub worker: usize,
    /// What it is.
    pub io: PortIo,
}

/// The I/O mode of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortIo {
    /// An AF_XDP socket bound to one receive queue.
    AfXdp {
        /// The receive queue.
        queue: u32,
        /// `native` (the driver runs the XDP program) or `generic` (after the socket buffer is built).
        xdp_mode: &'static str,
        /// Whether the kernel bound it in zero-copy mode.
        zero_copy: bool,
        /// Entries per ring (fill, completion, rx, tx).
        ring_size: u32,
        /// Bytes per UMEM frame.
        frame_size: u32,
        /// Bytes the kernel leaves free in front of every received frame (room for the headers routes add).
        headroom: u32,
    },
    /// An AF_PACKET socket.
    AfPacket {
        /// The fanout mode shared with the other workers' sockets (`hash`, `queue`), none with one worker.
        fanout: Option<&'static str>,
        /// The receive buffer asked for (bytes; the kernel may cap it).
        rcvbuf: usize,
    },
}

impl PortInfo {
    /// An AF_XDP port of device `dev` served by `worker`.
    pub fn xsk(dev: usize, worker: usize, p: &XskPort) -> PortInfo {
        let g = p.geometry();
        PortInfo {
            dev,
            worker,
            io: PortIo::AfXdp {
                queue: p.queue(),
                xdp_mode: p.attachment().mode().name(),
                zero_copy: p.is_zero_copy(),
                ring_size: g.ring_size,
                frame_size: g.frame_size,
                headroom: g.headroom,
            },
        }
    }

    /// An AF_PACKET port of device `dev` served by `worker`, in a fanout group of mode `fanout` (`hash`,
    /// `queue`; none with one worker), opened with the default receive buffer.
    pub fn packet(dev: usize, worker: usize, fanout: Option<&'static str>) -> PortInfo {
        PortInfo {
            dev,
            worker,
            io: PortIo::AfPacket {
                fanout,
                rcvbuf: AfPacketOptions::default().rcvbuf,
            },
        }
    }

    fn json(&self) -> Value {
        match &self.io {
            PortIo::AfXdp {
                queue,
                xdp_mode,
                zero_copy,
                ring_size,
                frame_size,
                headroom,
            } => {
                json!({"io": "af_xdp", "queue": queue, "worker": self.worker, "xdp_mode": xdp_mode,
                        "zero_copy": zero_copy, "ring_size": ring_size, "frame_size": frame_size,
                        "headroom": headroom})
            }
            PortIo::AfPacket { fanout, rcvbuf } => {
                json!({"io": "af_packet", "worker": self.worker, "fanout": fanout, "rcvbuf": rcvbuf})
            }
        }
    }

    fn text(&self) -> String {
        match &self.io {
            PortIo::AfXdp {
                queue,
                xdp_mode,
                zero_copy,
                ring_size,
                frame_size,
                headroom,
            } => format!(
                "    queue {queue}: worker {}, af_xdp, xdp {xdp_mode}, {}, rings {ring_size}, frames {frame_size} bytes, headroom {headroom}\n",
                self.worker,
                if *zero_copy { "zero-copy" } else { "copy" }
            ),
            PortIo::AfPacket { fanout, rcvbuf } => format!(
                "    socket: worker {}, af_packet, fanout {}, receive buffer {rcvbuf} bytes\n",
                self.worker,
                fanout.unwrap_or("none")
            ),
        }
    }
}

/// `show interfaces` over snapshot `snap` and the router's `ports`, whose back end is `io`.
pub fn show(snap: &Snapshot, ports: &[PortInfo], io: &str, as_json: bool) -> String {
    if as_json {
        let v: Vec<Value> = snap
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let p: Vec<Value> = ports.iter().filter(|p| p.dev == i).map(PortInfo::json).collect();
                json!({"ifname": l.name, "mtu": l.mtu, "address": mac_text(&l.mac), "io": io, "ports": p})
            })
            .collect();
        return format!("{}\n", Value::Array(v));
    }
    let mut s = String::new();
    for (i, l) in snap.links.iter().enumerate() {
        s += &format!(
            "{}: mtu {} address {} io {io}\n",
            l.name,
            l.mtu,
            mac_text(&l.mac)
        );
        let mut any = false;
        for p in ports.iter().filter(|p| p.dev == i) {
            s += &p.text();
            any = true;
        }
        if !any {
            s += "    no port\n";
        }
    }
    s
}
