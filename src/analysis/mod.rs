//! Explaining the double reallocation: the kernel's skb headroom arithmetic ([`skb`]).
pub mod skb;
