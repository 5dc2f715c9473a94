//! Packet I/O: capture files (pcap and pcapng) and live ports ([`port::Port`]).

pub mod linktype;
pub mod pcap;
pub mod port;
