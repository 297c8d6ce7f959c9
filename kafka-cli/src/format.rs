//! kcat's `-f` output format: a template parsed once, then rendered per record into a
//! reused buffer.

use kafka_tokio::ConsumerRecord;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    Value,
    Timestamp,
    Headers,
    KeyLen,
    ValueLen,
}

/// A parsed `-f` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format(Vec<Piece>);

impl Format {
    /// Parses a template; an unknown `%x` token is an error that names it.
    pub fn parse(s: &str) -> Result<Format, String> {
        let mut pieces = Vec::new();
        let mut text = Vec::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            let piece = match c {
                '%' => match chars.next() {
                    Some('t') => Piece::Topic,
                    Some('p') => Piece::Partition,
                    Some('o') => Piece::Offset,
                    Some('k') => Piece::Key,
                    Some('s') => Piece::Value,
                    Some('T') => Piece::Timestamp,
                    Some('h') => Piece::Headers,
                    Some('K') => Piece::KeyLen,
                    Some('S') => Piece::ValueLen,
                    Some('%') => {
                        text.push(b'%');
                        continue;
                    }
                    Some(other) => return Err(format!("-f: unknown token %{other}")),
                    None => return Err("-f: a lone % at the end".into()),
                },
                '\\' => {
                    match chars.next() {
                        Some('n') => text.push(b'\n'),
                        Some('t') => text.push(b'\t'),
                        Some('r') => text.push(b'\r'),
                        Some('\\') => text.push(b'\\'),
                        Some(other) => {
                            text.push(b'\\');
                            let mut b = [0; 4];
                            text.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
                        }
                        None => text.push(b'\\'),
                    }
                    continue;
                }
                other => {
                    let mut b = [0; 4];
                    text.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
                    continue;
                }
            };
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(piece);
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Format(pieces))
    }

    /// Appends one record, rendered, to `out`.
    pub fn render(&self, r: &ConsumerRecord, out: &mut Vec<u8>) {
        use std::io::Write;
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Topic => out.extend_from_slice(r.topic.as_bytes()),
                Piece::Partition => write!(out, "{}", r.partition).expect("vec"),
                Piece::Offset => write!(out, "{}", r.offset).expect("vec"),
                Piece::Key => out.extend_from_slice(r.key.as_deref().unwrap_or_default()),
                Piece::Value => out.extend_from_slice(r.value.as_deref().unwrap_or_default()),
                Piece::Timestamp => write!(out, "{}", r.timestamp).expect("vec"),
                Piece::KeyLen => {
                    write!(out, "{}", r.key.as_ref().map_or(-1, |k| k.len() as i64)).expect("vec")
                }
                Piece::ValueLen => {
                    write!(out, "{}", r.value.as_ref().map_or(-1, |v| v.len() as i64)).expect("vec")
                }
                Piece::Headers => {
                    // kcat: comma-separated name=value.
                    for (i, h) in r.headers.clone().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(&h.key);
                        out.push(b'=');
                        out.extend_from_slice(h.value.as_deref().unwrap_or_default());
                    }
                }
            }
        }
    }
}

/// The named client-wide metrics of `group`, as a JSON object keyed by Java's names (NaN,
/// an average of nothing, as null).
pub fn headline(
    m: &kafka_tokio::MetricsSnapshot,
    group: &str,
    names: &[&str],
) -> serde_json::Value {
    names
        .iter()
        .map(|n| {
            let v = m.get(group, n).filter(|v| v.is_finite());
            ((*n).to_owned(), serde_json::json!(v))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_escapes() {
        let f = Format::parse("%t/%p@%o %k=%s\\t%%\\n").unwrap();
        assert_eq!(f.0.len(), 10);
        assert_eq!(f.0[9], Piece::Text(b"\t%\n".to_vec()));
        assert!(Format::parse("%x").unwrap_err().contains("%x"));
        assert!(Format::parse("abc%").is_err());
    }
}
