//! Tunnels (in progress).
