//! The checks Linux makes on the options of a Hop-by-Hop header (every packet) and of the Destination Options
//! headers it processes (those in front of a routing header, for a packet addressed to it): the TLV encoding of
//! RFC 8200 §4.2, at most 7 bytes of padding in a row and PadN data all zero (RFC 4942 §2.1.9.5), at most
//! [`MAX_OPTIONS`] options that are not padding, and the action an unrecognised option's type asks for.
//! Option contents (IOAM) are processed elsewhere ([`crate::hop::ioam`]).

use crate::stats::DropReason;
use crate::wire::hbh::{OPT_PAD1, OPT_PADN};

/// Most non-padding options in one header: Linux's default `net.ipv6.max_hbh_opts_number` and
/// `max_dst_opts_number`.
pub const MAX_OPTIONS: usize = 8;

/// Why an options header is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionProblem {
    /// The drop reason.
    pub reason: DropReason,
    /// For an unrecognised option whose action asks for it (type bits 10, or 11 with a unicast destination):
    /// the option's offset in the header, for an ICMPv6 Parameter Problem code 2 pointing at it.
    pub param_problem: Option<usize>,
}

impl OptionProblem {
    fn drop(reason: DropReason) -> Self {
        OptionProblem {
            reason,
            param_problem: None,
        }
    }
}

/// Checks the options of the header `hdr` (the whole header, from its Next Header byte), in order; the first
/// problem found decides, as in Linux. Options whose type has action bits 00 are skipped (IOAM 0x31, Router
/// Alert 0x05 and unknown ones alike); any other type is one lwt6 does not recognise (the Jumbo Payload option
/// included: lwt6 does not carry jumbograms).
pub fn check(hdr: &[u8]) -> Result<(), OptionProblem> {
    let mut at = 2;
    let (mut padding, mut options) = (0usize, 0usize);
    while at < hdr.len() {
        let ty = hdr[at];
        if ty == OPT_PAD1 {
            padding += 1;
            if padding > 7 {
                return Err(OptionProblem::drop(DropReason::BadPadding));
            }
            at += 1;
            continue;
        }
        let Some(&len) = hdr.get(at + 1) else {
            return Err(OptionProblem::drop(DropReason::ExtHeaderMalformed));
        };
        let end = at + 2 + usize::from(len);
        let Some(data) = hdr.get(at + 2..end) else {
            return Err(OptionProblem::drop(DropReason::ExtHeaderMalformed));
        };
        if ty == OPT_PADN {
            padding += 2 + data.len();
            if padding > 7 || data.iter().any(|b| *b != 0) {
                return Err(OptionProblem::drop(DropReason::BadPadding));
            }
        } else {
            options += 1;
            if options > MAX_OPTIONS {
                return Err(OptionProblem::drop(DropReason::TooManyOptions));
            }
            // RFC 8200 §4.2: 01 discard; 10 discard and send Parameter Problem code 2; 11 the same unless the
            // destination is multicast (a multicast destination is dropped before this is reached).
            match ty >> 6 {
                0 => {}
                1 => return Err(OptionProblem::drop(DropReason::UnknownOption)),
                _ => {
                    return Err(OptionProblem {
                        reason: DropReason::UnknownOption,
                        param_problem: Some(at),
                    });
                }
            }
            padding = 0;
        }
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(hdr: &[u8]) -> Option<(DropReason, Option<usize>)> {
        check(hdr).err().map(|p| (p.reason, p.param_problem))
    }

    #[test]
    fn padding_runs_and_contents() {
        // Next Header 17, Hdr Ext Len 0, six Pad1: fine.
        assert_eq!(reason(&[17, 0, 0, 0, 0, 0, 0, 0]), None);
        // Hdr Ext Len 1: option 0x1e (action 00, length 1), Pad1 x8, option 0x1e length 0, Pad1: 8 in a row.
        let mut h = vec![17, 1, 0x1e, 1, 0];
        h.extend([0; 8]);
        h.extend([0x1e, 0, 0]);
        assert_eq!(reason(&h), Some((DropReason::BadPadding, None)));
        // The same with seven Pad1: fine.
        let mut h = vec![17, 1, 0x1e, 1, 0];
        h.extend([0; 7]);
        h.extend([0x1e, 1, 0, 0]);
        assert_eq!(reason(&h), None);
        // PadN with non-zero data (RFC 4942 §2.1.9.5).
        assert_eq!(
            reason(&[17, 0, 1, 4, 0xde, 0xad, 0xbe, 0xef]),
            Some((DropReason::BadPadding, None))
        );
        // PadN of 8 bytes (6 data bytes), then an option: too much padding.
        let mut h = vec![17, 1, 1, 6, 0, 0, 0, 0, 0, 0];
        h.extend([0x1e, 4, 0, 0, 0, 0]);
        assert_eq!(reason(&h), Some((DropReason::BadPadding, None)));
    }

    #[test]
    fn option_count_and_actions() {
        // Eight options 0x1e of length 0 (action 00) in a 24-byte header, the rest Pad1 x6: fine; nine: too many.
        let mut h = vec![17, 2];
        h.extend([0x1e, 0].repeat(8));
        h.extend([0; 6]);
        assert_eq!(reason(&h), None);
        let mut h = vec![17, 2];
        h.extend([0x1e, 0].repeat(9));
        h.extend([0; 4]);
        assert_eq!(reason(&h), Some((DropReason::TooManyOptions, None)));
        // Action 01: silent; 10 and 11: a Parameter Problem pointing at the option (after PadN(0) at 2).
        assert_eq!(
            reason(&[17, 0, 1, 0, 0x5e, 2, 0, 0]),
            Some((DropReason::UnknownOption, None))
        );
        assert_eq!(
            reason(&[17, 0, 1, 0, 0x9e, 2, 0, 0]),
            Some((DropReason::UnknownOption, Some(4)))
        );
        assert_eq!(
            reason(&[17, 0, 0xde, 4, 0, 0, 0, 0]),
            Some((DropReason::UnknownOption, Some(2)))
        );
        // An option running past the end of the header.
        assert_eq!(
            reason(&[17, 0, 1, 9, 0, 0, 0, 0]),
            Some((DropReason::ExtHeaderMalformed, None))
        );
    }
}
