//! IOAM pre-allocated trace (RFC 9197 §4.4): the trace header round trip, the option view, node decoding, and a
//! transit fill: on `Filled` RemainingLen drops by exactly the block size and the filled block decodes; nothing
//! outside the option is written; `fill` and `fill_from_template` write the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::ioam::{
    FillOutcome, NodeData, TraceHeader, TraceOption, block_words, decode_nodes, fill,
    fill_from_template, validate_lwt,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = TraceHeader::parse(data) {
        let mut out = [0u8; 8];
        h.emit(&mut out);
        assert_eq!(&out[..7], &data[..7], "trace header round trip");
        assert_eq!(TraceHeader::parse(&out), Ok(h));
        let _ = validate_lwt(&h);
    }
    let Ok(opt) = TraceOption::new_checked(data) else {
        return;
    };
    let _ = opt.ioam_type();
    let _ = decode_nodes(&opt);
    let Ok(hdr) = opt.header() else {
        return;
    };
    let schema = [0x5au8; 8];
    let node = NodeData {
        hop_limit: 63,
        node_id: 0x11_1111,
        ingress_id: 0x0a0a,
        egress_id: 0x0c0c,
        ts_sec: 1,
        ts_frac: 2,
        ns_data: 0xdead_beef,
        queue_depth: 3,
        node_id_wide: 0x22_2222_2222_2222,
        ingress_wide: 4,
        egress_wide: 5,
        ns_data_wide: 0xcafe_c0de_dead_beef,
        schema: data.len().is_multiple_of(2).then_some((7, &schema[..])),
    };
    let opt_end = 2 + usize::from(opt.opt_len());
    let mut a = data.to_vec();
    let r = fill(&mut TraceOption::new_checked(&mut a[..]).unwrap(), &node);
    let mut b = data.to_vec();
    let r2 = fill_from_template(&opt, &mut b, &node);
    assert_eq!(r, r2, "fill and fill_from_template agree");
    if r.is_ok() {
        assert_eq!(a, b, "fill and fill_from_template write the same bytes");
    }
    assert_eq!(
        &a[opt_end..],
        &data[opt_end..],
        "nothing written after the option"
    );
    if r == Ok(FillOutcome::Filled) {
        let words = block_words(hdr.trace_type, node.schema.map(|(_, d)| d.len()));
        let after = TraceOption::new_checked(&a[..]).unwrap().header().unwrap();
        assert_eq!(
            usize::from(after.remaining_len) + words,
            usize::from(hdr.remaining_len)
        );
    }
});
