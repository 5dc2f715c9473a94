//! Node behaviours (in progress).
