//! router (in progress).
