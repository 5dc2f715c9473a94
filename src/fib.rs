//! fib (in progress).
