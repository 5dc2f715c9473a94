//! Router configuration in iproute2 syntax: one command per line, `#` comments.
//!
//! The parser turns a whole file into a [`Config`] or rejects it with the first [`ConfigError`]
//! (line number, offending token, reason). Nothing is half-applied. [`Builder`] applies one line at a time
//! (atomically: a failing line changes nothing), to a new configuration or to a running one; a [`Transaction`]
//! applies several as one step to a long-lived builder (undone together, without a copy of the routes) and
//! reports the routes they changed ([`RouteDelta`]). Routes are indexed by (table, prefix, metric): adding,
//! replacing or deleting one is a lookup, not a pass over the table.
//! [`load_file`] loads a file line by line (never held whole as text), with the HMAC secret a line may want
//! from standard input read or refused ([`StdinSecret`]).
//!
//! # Syntax
//!
//! One command per line; `#` outside quotes starts a comment; blank lines are ignored; a token that
//! starts with `"` or `'` runs to the matching quote (for secrets and schema data with spaces). A leading
//! `ip` and the family options `-4` / `-6` are accepted before every command except `sysctl`. Numbers are
//! decimal or `0x` hex. Commands are applied in file order: a `dev NAME`, namespace or schema must be
//! declared on an earlier line. Only `hmac KEYID` on a seg6 route may name a key set later in the file.
//!
//! ```text
//! link add [name] NAME [address MAC] [mtu 68..=65535]
//! addr|address add ADDR[/LEN] dev NAME
//! neigh add ADDR lladdr MAC dev NAME [nud permanent]
//! [-4|-6] route add [to] PREFIX|default [via [inet|inet6] ADDR] [dev NAME]
//!                   [metric|preference|priority N] [mtu [lock] N] [encap ENCAP]
//!   ENCAP := seg6 mode inline|encap|l2encap|encap.red|l2encap.red segs A[,B...] [hmac KEYID] [tunsrc ADDR]
//!          | ioam6 [mode inline|encap|auto] [tunsrc ADDR] [tundst ADDR] [freq K/N]
//!                  trace prealloc type T ns N size S
//!          | rpl segs A[,B...]
//! ioam namespace add ID [data D32] [wide D64]
//! ioam namespace set ID schema SID|none
//! ioam schema add ID DATA
//! sr tunsrc set ADDR                      (:: clears it; not multicast or loopback)
//! sr hmac set KEYID sha1|sha256 [secret S] (without `secret`: the stdin secret, see parse_with_stdin)
//! sysctl [-w] KEY=VALUE [KEY=VALUE...]    (spaces around `=` allowed)
//! ```
//!
//! A route's family comes from `-4`/`-6`, else its prefix, else its gateway; `default` with none of
//! these is IPv4, as in iproute2. IPv6 routes without a metric (or with metric 0) get 1024, as the
//! kernel stores them. Route identity for "route already exists" is (prefix, metric).

#![deny(unsafe_code)]

mod load;
mod parse;

pub use load::{LoadError, StdinSecret, load_file};
pub use lwt6_dataplane::spec::*;
pub use parse::lines;
pub use parse::{Builder, RouteDelta, Transaction, parse, parse_with_stdin, trace_filter};
