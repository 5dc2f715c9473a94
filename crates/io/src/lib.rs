//! Packet I/O: capture files (pcap and pcapng).

pub mod linktype;
pub mod pcap;
