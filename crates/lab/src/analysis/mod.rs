//! Explaining the double reallocation: the kernel's skb headroom arithmetic ([`skb`]), NIC receive headroom
//! presets ([`nic`]) and the per-packet reallocation predictor behind `lwt6 headroom` ([`headroom`]).
pub mod headroom;
pub mod nic;
pub mod skb;
