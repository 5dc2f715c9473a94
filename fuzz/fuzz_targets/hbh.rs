//! Hop-by-Hop / Destination options: every option lies inside the header, options follow each other, an error
//! comes once and ends the walk; padding written by `write_padding` parses as padding.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::hbh::{OptionIter, write_padding};

fuzz_target!(|data: &[u8]| {
    let mut next = 2;
    let mut failed = false;
    for o in OptionIter::new(data) {
        assert!(!failed, "nothing after an error");
        match o {
            Ok(o) => {
                assert_eq!(o.offset, next, "options follow each other");
                let len = if o.ty == 0 { 1 } else { 2 + o.data_len };
                assert!(o.offset + len <= data.len(), "an option inside the header");
                next = o.offset + len;
            }
            Err(_) => failed = true,
        }
    }
    if let Some(&n) = data.first() {
        let total = usize::from(n) * 3;
        let mut hdr = vec![0xee; 2 + total];
        write_padding(&mut hdr[2..], total);
        let mut covered = 2;
        for o in OptionIter::new(&hdr) {
            let o = o.expect("padding parses");
            assert!(o.ty == 0 || o.ty == 1, "padding is Pad1 or PadN");
            covered = o.offset + if o.ty == 0 { 1 } else { 2 + o.data_len };
        }
        assert_eq!(covered, hdr.len(), "padding fills exactly the room given");
    }
});
