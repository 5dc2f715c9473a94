//! Capture files (pcap and pcapng): the reader never panics and either fails with a named error or returns
//! frames (captured length never above the original length); the frames written back (pcapng and pcap writers) read back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_io::pcap::{OutFrame, pcap_bytes, pcapng_bytes, read_capture};

fuzz_target!(|data: &[u8]| {
    let Ok(frames) = read_capture(data) else {
        return;
    };
    for f in &frames {
        assert!(
            f.data.len() <= f.orig_len as usize,
            "captured length <= original length"
        );
    }
    let out: Vec<OutFrame> = frames
        .iter()
        .map(|f| OutFrame {
            iface: 0,
            ts_ns: f.ts_ns,
            data: &f.data,
        })
        .collect();
    let back = read_capture(&pcapng_bytes(&["r0"], &out)).expect("our pcapng reads back");
    assert_eq!(back.len(), frames.len());
    for (a, b) in frames.iter().zip(&back) {
        assert_eq!((a.ts_ns, &a.data), (b.ts_ns, &b.data), "pcapng round trip");
    }
    let pairs: Vec<(u64, &[u8])> = frames.iter().map(|f| (f.ts_ns, &f.data[..])).collect();
    let back = read_capture(&pcap_bytes(&pairs)).expect("our pcap reads back");
    assert_eq!(back.len(), frames.len());
    for (a, b) in frames.iter().zip(&back) {
        assert_eq!(a.data, b.data, "pcap round trip");
    }
});
