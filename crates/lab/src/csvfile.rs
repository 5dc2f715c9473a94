//! The one CSV reader and writer of the lab's files (`sweep.csv`, `ioam.csv`, the live IOAM runs' CSV), on the
//! `csv` crate: RFC 4180 quoting, `\r\n` or `\n` line ends, and one error style that names the line and the
//! column (1-based, with the header's name for it). The caller adds the file name.

use std::fmt;

/// A CSV file that cannot be read: where (line, and column when one field is at fault) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvError {
    /// 1-based line.
    pub line: u64,
    /// 1-based column and its name in the header.
    pub column: Option<(usize, String)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.column {
            Some((k, name)) => write!(
                f,
                "line {}, column {k} ({name}): {}",
                self.line, self.message
            ),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for CsvError {}

/// A CSV file read: its header and its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The header's column names (trimmed).
    pub header: Vec<String>,
    /// The records after the header, blank lines left out.
    pub rows: Vec<Row>,
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// 1-based line it starts on.
    pub line: u64,
    /// Its fields (trimmed).
    pub fields: Vec<String>,
}

impl Table {
    /// The 0-based index of column `name` (None when the header lacks it).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// An error about field `k` (0-based) of `row`.
    pub fn error(&self, row: &Row, k: usize, message: impl Into<String>) -> CsvError {
        CsvError {
            line: row.line,
            column: Some((k + 1, self.header.get(k).cloned().unwrap_or_default())),
            message: message.into(),
        }
    }

    /// Field `k` of `row` as a finite number ≥ 0, or an error naming it.
    pub fn number(&self, row: &Row, k: usize) -> Result<f64, CsvError> {
        let v = row.fields.get(k).map_or("", String::as_str);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| self.error(row, k, format!("'{v}' is not a number ≥ 0")))
    }

    /// Field `k` of `row` parsed as `T`, or an error naming it and saying what was expected.
    pub fn parse<T: std::str::FromStr>(
        &self,
        row: &Row,
        k: usize,
        what: &str,
    ) -> Result<T, CsvError> {
        let v = row.fields.get(k).map_or("", String::as_str);
        v.parse::<T>()
            .map_err(|_| self.error(row, k, format!("'{v}' is not {what}")))
    }
}

/// Reads a CSV text with a header line. Each record must have between `min_fields` (None: the header's count)
/// and the header's count of fields.
pub fn read(text: &str, min_fields: Option<usize>) -> Result<Table, CsvError> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut records = r.records();
    // The line a record starts on, from its byte offset (the crate's own line count leaves out blank lines and
    // counts a CRLF file's lines wrong): the line breaks before it, and those of the blank lines it skipped.
    let bytes = text.as_bytes();
    let line_at = |p: Option<&csv::Position>| -> u64 {
        let b = p.map_or(0, |p| p.byte() as usize).min(bytes.len());
        let before = bytes[..b].iter().filter(|&&c| c == b'\n').count();
        let blank = bytes[b..]
            .iter()
            .take_while(|&&c| c == b'\n' || c == b'\r')
            .filter(|&&c| c == b'\n')
            .count();
        (1 + before + blank) as u64
    };
    let fail = |e: csv::Error| CsvError {
        line: line_at(e.position()),
        column: None,
        message: match e.kind() {
            csv::ErrorKind::Utf8 { err, .. } => format!("not UTF-8 in field {}", err.field() + 1),
            _ => e.to_string(),
        },
    };
    let header: Vec<String> = match records.next() {
        Some(h) => h.map_err(fail)?.iter().map(str::to_string).collect(),
        None => {
            return Err(CsvError {
                line: 1,
                column: None,
                message: "empty file: expected the header line".into(),
            });
        }
    };
    let min = min_fields.unwrap_or(header.len());
    let mut rows = Vec::new();
    for rec in records {
        let rec = rec.map_err(fail)?;
        let line = line_at(rec.position());
        // A line of blanks only.
        if rec.iter().all(str::is_empty) {
            continue;
        }
        let n = rec.len();
        if n < min || n > header.len() {
            let expected = if min == header.len() {
                format!("{min}")
            } else {
                format!("{min} to {}", header.len())
            };
            return Err(CsvError {
                line,
                column: None,
                message: format!(
                    "{n} fields, expected {expected} (the header has {})",
                    header.len()
                ),
            });
        }
        rows.push(Row {
            line,
            fields: rec.iter().map(str::to_string).collect(),
        });
    }
    Ok(Table { header, rows })
}

/// Writes a header and records as CSV (`\n` line ends; a field is quoted only when it must be).
pub fn write<I, R, F>(header: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into memory cannot fail.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_line_ends_and_errors() {
        // RFC 4180 §2: a quoted field may hold commas, quotes (doubled) and line breaks; CRLF ends records too.
        let t = read("a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\r\n\r\n 2 ,3\n", None).unwrap();
        assert_eq!(t.header, ["a", "b"]);
        assert_eq!(t.rows[0].fields, ["x,1", "say \"hi\""]);
        assert_eq!(
            (t.rows[1].line, t.rows[1].fields.clone()),
            (4, vec!["2".into(), "3".into()])
        );
        assert_eq!(t.number(&t.rows[1], 0), Ok(2.0));
        let e = t.number(&t.rows[0], 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2, column 2 (b): 'say \"hi\"' is not a number ≥ 0"
        );
        let e = read("a,b\n1,2\n1\n", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: 1 fields, expected 2 (the header has 2)"
        );
        assert_eq!(read("", None).unwrap_err().line, 1);
        // What is written reads back, quoted where it must be.
        let text = write(&["a", "b"], [["x,1", "2"], ["3", "4"]]);
        assert_eq!(text, "a,b\n\"x,1\",2\n3,4\n");
        assert_eq!(read(&text, None).unwrap().rows[0].fields, ["x,1", "2"]);
    }
}
