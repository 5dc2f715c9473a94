//! Lines of a configuration file: ended by LF (Unix), CR LF (DOS) or a CR alone (classic Mac OS), so that the
//! line numbers in errors are the ones an editor shows whatever the file's line endings.

use std::io::BufRead;

/// The lines of `text`, each without its ending (LF, CR LF or CR). As `str::split('\n')`, a text ending with a
/// line end yields a last, empty line.
pub fn split(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match t.find(['\n', '\r']) {
            Some(i) => {
                let after = if t[i..].starts_with("\r\n") {
                    i + 2
                } else {
                    i + 1
                };
                rest = Some(&t[after..]);
                Some(&t[..i])
            }
            None => {
                rest = None;
                Some(t)
            }
        }
    })
}

/// The lines of a stream, read one at a time (never the whole stream), each without its ending (LF, CR LF or
/// CR; a CR LF split across two reads is one ending). As `BufRead::split`, a stream ending with a line end
/// yields no empty last line.
pub struct Reader<R: BufRead> {
    src: R,
    /// The last line ended with a CR: an LF right after it belongs to that ending.
    after_cr: bool,
}

impl<R: BufRead> Reader<R> {
    /// Lines of `src`.
    pub fn new(src: R) -> Self {
        Reader {
            src,
            after_cr: false,
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = std::io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut line = Vec::new();
        let mut any = false;
        loop {
            let avail = match self.src.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(Err(e)),
            };
            if avail.is_empty() {
                return any.then_some(Ok(line));
            }
            if std::mem::take(&mut self.after_cr) && avail[0] == b'\n' {
                self.src.consume(1);
                continue;
            }
            any = true;
            match avail.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    line.extend_from_slice(&avail[..i]);
                    self.after_cr = avail[i] == b'\r';
                    self.src.consume(i + 1);
                    return Some(Ok(line));
                }
                None => {
                    line.extend_from_slice(avail);
                    let n = avail.len();
                    self.src.consume(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_ending_ends_a_line() {
        for text in [
            "a\nb\nc",
            "a\r\nb\r\nc",
            "a\rb\rc",
            "a\r\nb\rc",
            "a\nb\r\nc",
        ] {
            assert_eq!(split(text).collect::<Vec<_>>(), ["a", "b", "c"], "{text:?}");
        }
        // A CR then an LF is one ending; an LF then a CR is two.
        assert_eq!(split("a\n\rb").collect::<Vec<_>>(), ["a", "", "b"]);
        assert_eq!(split("a\n").collect::<Vec<_>>(), ["a", ""]);
        assert_eq!(split("").collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn a_stream_read_in_pieces_splits_the_same() {
        for text in ["a\r\nb\r\nc\r\n", "a\rb\rc\r", "a\nb\nc", "a\r\n\r\nc"] {
            // A buffer of one byte: a CR LF always falls across two reads.
            let r = std::io::BufReader::with_capacity(1, text.as_bytes());
            let got: Vec<String> = Reader::new(r)
                .map(|l| String::from_utf8(l.unwrap()).unwrap())
                .collect();
            let mut want: Vec<&str> = split(text).collect();
            if text.ends_with(['\n', '\r']) {
                want.pop();
            }
            assert_eq!(got, want, "{text:?}");
        }
    }
}
