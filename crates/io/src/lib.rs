//! Packet I/O: capture files (pcap and pcapng) and live ports ([`port::Port`]).

#[cfg(target_os = "linux")]
pub mod afxdp;
#[cfg(target_os = "linux")]
pub mod generator;
pub mod linktype;
pub mod pcap;
pub mod port;
