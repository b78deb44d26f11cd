//! The zip structures a torch checkpoint or an `.npz` needs, read from byte slices: the
//! end-of-central-directory record (found by scanning back from the end of the file), the
//! Zip64 locator and record, the central directory and a member's local header. Layouts
//! and signatures are those of PKWARE's APPNOTE.TXT (4.3.7, 4.3.12, 4.3.14–4.3.16, 4.5.3).
//!
//! Hand-written rather than taken from the `zip` crate: that crate reads through
//! `Read + Seek` (a whole-file stream); here the caller fetches byte ranges itself and
//! hands us only the few records we need, and nothing is ever decompressed.

use crate::error::{Code, Finding};

/// Fixed part of the end-of-central-directory record.
pub const EOCD_LEN: u64 = 22;
/// Longest archive comment (its length is a u16), so the EOCD starts at most this many
/// bytes plus [`EOCD_LEN`] before the end.
pub const MAX_COMMENT: u64 = 65_535;
/// The Zip64 end-of-central-directory locator, right before the EOCD.
pub const ZIP64_LOCATOR_LEN: u64 = 20;
/// Fixed part of the Zip64 end-of-central-directory record.
pub const ZIP64_EOCD_LEN: u64 = 56;
/// Fixed part of a central directory entry.
pub const CENTRAL_ENTRY_LEN: u64 = 46;
/// Fixed part of a local file header.
pub const LOCAL_HEADER_LEN: u64 = 30;
/// Largest central directory we read. torch writes about 100 bytes per storage plus a few
/// records, so 64 MiB covers over half a million storages.
pub const MAX_CENTRAL_DIRECTORY: u64 = 64 << 20;

const SIG_EOCD: u32 = 0x0605_4b50;
const SIG_ZIP64_LOCATOR: u32 = 0x0706_4b50;
const SIG_ZIP64_EOCD: u32 = 0x0606_4b50;
const SIG_CENTRAL: u32 = 0x0201_4b50;
const SIG_LOCAL: u32 = 0x0403_4b50;
const ZIP64_EXTRA_ID: u16 = 0x0001;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([*s.first()?, *s.get(1)?]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Some(u32::from_le_bytes(a))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Where the central directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directory {
    /// Absolute offset of the EOCD record.
    pub eocd_at: u64,
    pub entries: u64,
    pub cd_offset: u64,
    pub cd_size: u64,
    /// Absolute offset of the Zip64 EOCD record, when a locator points to one (its values
    /// then replace the EOCD's).
    pub zip64_at: Option<u64>,
}

/// Finds the EOCD in `tail` (the last bytes of the file, starting at absolute `tail_start`):
/// the last signature whose comment length reaches exactly the end of the file.
pub fn find_eocd(tail: &[u8], tail_start: u64, file_len: u64) -> Option<Directory> {
    let last = tail.len().checked_sub(EOCD_LEN as usize)?;
    for i in (0..=last).rev() {
        if u32_at(tail, i) != Some(SIG_EOCD) {
            continue;
        }
        let comment = u64::from(u16_at(tail, i + 20)?);
        let at = tail_start.checked_add(i as u64)?;
        if at.checked_add(EOCD_LEN)?.checked_add(comment)? != file_len {
            continue;
        }
        let entries = u64::from(u16_at(tail, i + 10)?);
        let cd_size = u64::from(u32_at(tail, i + 12)?);
        let cd_offset = u64::from(u32_at(tail, i + 16)?);
        // the locator, when present, sits right before the EOCD
        let zip64_at = i
            .checked_sub(ZIP64_LOCATOR_LEN as usize)
            .filter(|&l| u32_at(tail, l) == Some(SIG_ZIP64_LOCATOR))
            .and_then(|l| u64_at(tail, l + 8));
        return Some(Directory {
            eocd_at: at,
            entries,
            cd_offset,
            cd_size,
            zip64_at,
        });
    }
    None
}

/// Applies the Zip64 EOCD record (`rec`, read at `dir.zip64_at`).
pub fn apply_zip64(dir: &mut Directory, rec: &[u8]) -> Result<(), Finding> {
    let at = dir.zip64_at.unwrap_or(0);
    if u32_at(rec, 0) != Some(SIG_ZIP64_EOCD) {
        return Err(Finding::error(
            Code::ZipMalformed,
            "the Zip64 locator points to no Zip64 end-of-central-directory record",
        )
        .at(at));
    }
    let (Some(entries), Some(size), Some(offset)) =
        (u64_at(rec, 32), u64_at(rec, 40), u64_at(rec, 48))
    else {
        return Err(Finding::error(
            Code::ZipMalformed,
            "the Zip64 end-of-central-directory record is cut short",
        )
        .at(at));
    };
    dir.entries = entries;
    dir.cd_size = size;
    dir.cd_offset = offset;
    Ok(())
}

/// One central directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    /// 0 = stored, 8 = deflate, …
    pub method: u16,
    pub flags: u16,
    pub crc32: u32,
    pub compressed_size: u64,
    pub size: u64,
    /// Absolute offset of the member's local header.
    pub header_offset: u64,
    /// Absolute offset of this central directory entry.
    pub entry_offset: u64,
}

/// Parses the central directory `cd` (read at absolute `cd_offset`). Stops at the first
/// malformed entry with a finding; the entries before it are kept.
pub fn parse_central_directory(
    cd: &[u8],
    cd_offset: u64,
    expected: u64,
) -> (Vec<Entry>, Vec<Finding>) {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    let mut pos = 0usize;
    while pos < cd.len() {
        let at = cd_offset.saturating_add(pos as u64);
        let bad = |m: &str| {
            Finding::error(Code::ZipMalformed, m.to_string())
                .at(at)
                .field("central directory")
        };
        if u32_at(cd, pos) != Some(SIG_CENTRAL) {
            findings.push(bad("expected a central directory entry signature"));
            break;
        }
        let field = |o: usize| u16_at(cd, pos + o);
        let (Some(flags), Some(method), Some(n), Some(m), Some(k)) =
            (field(8), field(10), field(28), field(30), field(32))
        else {
            findings.push(bad("a central directory entry is cut short"));
            break;
        };
        let (Some(crc32), Some(csize), Some(usize_), Some(lho)) = (
            u32_at(cd, pos + 16),
            u32_at(cd, pos + 20),
            u32_at(cd, pos + 24),
            u32_at(cd, pos + 42),
        ) else {
            findings.push(bad("a central directory entry is cut short"));
            break;
        };
        let name_at = pos + CENTRAL_ENTRY_LEN as usize;
        let extra_at = name_at + usize::from(n);
        let end = extra_at + usize::from(m) + usize::from(k);
        let (Some(name), Some(extra)) = (
            cd.get(name_at..extra_at),
            cd.get(extra_at..extra_at + usize::from(m)),
        ) else {
            findings.push(bad(
                "a central directory entry's name or extra field runs past the directory",
            ));
            break;
        };
        let mut e = Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method,
            flags,
            crc32,
            compressed_size: u64::from(csize),
            size: u64::from(usize_),
            header_offset: u64::from(lho),
            entry_offset: at,
        };
        apply_zip64_extra(
            &mut e,
            extra,
            usize_ == u32::MAX,
            csize == u32::MAX,
            lho == u32::MAX,
        );
        out.push(e);
        pos = end;
    }
    if findings.is_empty() && out.len() as u64 != expected {
        findings.push(
            Finding::error(
                Code::ZipMalformed,
                format!("the end-of-central-directory record counts {expected} entries; the directory holds {}", out.len()),
            )
            .at(cd_offset)
            .field("central directory"),
        );
    }
    (out, findings)
}

/// The Zip64 extended-information extra field (APPNOTE 4.5.3): the 8-byte values appear
/// in this order, each only when its 32-bit field is 0xFFFFFFFF.
fn apply_zip64_extra(e: &mut Entry, extra: &[u8], size: bool, csize: bool, offset: bool) {
    let mut p = 0usize;
    while let (Some(id), Some(len)) = (u16_at(extra, p), u16_at(extra, p + 2)) {
        let body = extra.get(p + 4..p + 4 + usize::from(len)).unwrap_or(&[]);
        if id == ZIP64_EXTRA_ID {
            let mut q = 0usize;
            let mut next = || {
                let v = u64_at(body, q);
                q += 8;
                v
            };
            if size {
                if let Some(v) = next() {
                    e.size = v;
                }
            }
            if csize {
                if let Some(v) = next() {
                    e.compressed_size = v;
                }
            }
            if offset {
                if let Some(v) = next() {
                    e.header_offset = v;
                }
            }
            return;
        }
        p += 4 + usize::from(len);
    }
}

/// From a member's local header (`lh`: at least [`LOCAL_HEADER_LEN`] + the name's length
/// bytes, read at `e.header_offset`), the absolute offset of its first data byte: header
/// offset + 30 + the local name length + the local extra length (torch pads the local
/// extra field so that data is 64-byte aligned; the central one does not say so).
pub fn data_offset(e: &Entry, lh: &[u8]) -> Result<u64, Finding> {
    let bad = |m: String| {
        Finding::error(Code::ZipMalformed, m)
            .at(e.header_offset)
            .field(e.name.clone())
    };
    if u32_at(lh, 0) != Some(SIG_LOCAL) {
        return Err(bad(format!(
            "no local header where the central directory puts {}",
            e.name
        )));
    }
    let (Some(n), Some(m)) = (u16_at(lh, 26), u16_at(lh, 28)) else {
        return Err(bad("the local header is cut short".into()));
    };
    let name_at = LOCAL_HEADER_LEN as usize;
    if let Some(local_name) = lh.get(name_at..name_at + usize::from(n)) {
        if local_name != e.name.as_bytes() {
            return Err(bad(format!(
                "the local header names {:?}, the central directory {:?}",
                String::from_utf8_lossy(local_name),
                e.name
            )));
        }
    }
    e.header_offset
        .checked_add(LOCAL_HEADER_LEN + u64::from(n) + u64::from(m))
        .ok_or_else(|| bad("offset overflow".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-member stored zip, built by hand from the APPNOTE layout.
    fn one_member(name: &[u8], data: &[u8], comment: &[u8]) -> Vec<u8> {
        let mut z = Vec::new();
        z.extend_from_slice(&SIG_LOCAL.to_le_bytes());
        z.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&4u16.to_le_bytes());
        z.extend_from_slice(name);
        z.extend_from_slice(b"\xfe\xca\0\0"); // an extra field only the local header has
        z.extend_from_slice(data);
        let cd = z.len();
        z.extend_from_slice(&SIG_CENTRAL.to_le_bytes());
        z.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&[0; 12]);
        z.extend_from_slice(&0u32.to_le_bytes());
        z.extend_from_slice(name);
        let cd_len = z.len() - cd;
        z.extend_from_slice(&SIG_EOCD.to_le_bytes());
        z.extend_from_slice(&[0, 0, 0, 0, 1, 0, 1, 0]);
        z.extend_from_slice(&(cd_len as u32).to_le_bytes());
        z.extend_from_slice(&(cd as u32).to_le_bytes());
        z.extend_from_slice(&(comment.len() as u16).to_le_bytes());
        z.extend_from_slice(comment);
        z
    }

    #[test]
    fn reads_a_hand_built_zip() {
        for comment in [&b""[..], b"a comment with PK\x05\x06 inside"] {
            let z = one_member(b"a/data.pkl", b"hello", comment);
            let d = find_eocd(&z, 0, z.len() as u64).unwrap();
            assert_eq!(d.entries, 1);
            let cd = &z[d.cd_offset as usize..(d.cd_offset + d.cd_size) as usize];
            let (entries, f) = parse_central_directory(cd, d.cd_offset, d.entries);
            assert!(f.is_empty(), "{f:?}");
            assert_eq!(entries[0].name, "a/data.pkl");
            let off = data_offset(&entries[0], &z[..40]).unwrap();
            assert_eq!(off, 30 + 10 + 4);
            assert_eq!(&z[off as usize..off as usize + 5], b"hello");
        }
    }

    #[test]
    fn truncated_zip_has_no_eocd() {
        let z = one_member(b"x", b"data", b"");
        assert!(find_eocd(&z[..z.len() - 1], 0, z.len() as u64 - 1).is_none());
        assert!(find_eocd(b"", 0, 0).is_none());
    }
}
