//! Packet I/O: capture files (pcap and pcapng), live ports ([`port::Port`]: [`afpacket`]) and what the system
//! says about its interfaces ([`netdev`]).

pub mod afpacket;
#[cfg(target_os = "linux")]
pub mod afxdp;
#[cfg(target_os = "linux")]
pub mod generator;
pub mod heap;
pub mod linktype;
#[cfg(target_os = "linux")]
pub mod livegen;
pub mod netdev;
pub mod output;
pub mod pcap;
pub mod port;
pub mod sys;
#[cfg(target_os = "linux")]
pub mod xdpfeatures;
