//! Capture files (pcap and pcapng): the reader never panics and either fails with a named error or returns
//! frames (captured length never above the original length); read through short reads (chunks of 1 to 8
//! bytes, as a pipe may deliver them) it returns the same frames and the same error; the frames written back
//! (pcapng and pcap writers) read back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_io::pcap::{CaptureReader, OutFrame, pcap_bytes, pcapng_bytes, read_capture};
use std::io::Read;

/// Hands out at most `chunk` bytes per read.
struct Chunks<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Chunks<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(out.len()).min(self.chunk);
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let whole = read_capture(data);
    let chunk = usize::from(data.last().copied().unwrap_or(0) % 8) + 1;
    let chunked = CaptureReader::new(Chunks { data, chunk }).and_then(|r| r.collect());
    assert_eq!(whole, chunked, "short reads change nothing");
    let Ok(frames) = whole else {
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
