use super::*;
use std::collections::BTreeMap;

#[test]
fn range_cache_merges() {
    let mut c = RangeCache::default();
    c.insert(10, vec![1, 2, 3]);
    c.insert(13, vec![4, 5]);
    assert_eq!(c.get(10, 5), Some(&[1, 2, 3, 4, 5][..]));
    c.insert(8, vec![9, 9, 1]);
    assert_eq!(c.get(8, 7), Some(&[9, 9, 1, 2, 3, 4, 5][..]));
    c.insert(20, vec![7]);
    assert_eq!(c.get(14, 7), None, "a hole at 15..20");
    assert_eq!(c.run_from(12), &[3, 4, 5][..]);
    c.insert(15, vec![0; 5]);
    assert_eq!(c.get(8, 13).map(|b| b.len()), Some(13));
    assert_eq!(c.ranges.len(), 1);
}

#[test]
fn short_read_is_a_finding() {
    let mut r = Reader::new(100);
    let Next::NeedRange { start, len } = r.step() else {
        panic!()
    };
    assert_eq!((start, len), (0, HEAD_LEN));
    r.supply(0, vec![0x80; 10]);
    let Next::Done(i) = r.step() else { panic!() };
    assert_eq!(i.findings[0].code, Code::ReadFailed);
    assert_eq!(i.safety.verdict, Verdict::Error);
}

// ---- hand-built zips (layouts from PKWARE's APPNOTE) ----

const SIG_LOCAL: u32 = 0x0403_4b50;
const SIG_CENTRAL: u32 = 0x0201_4b50;
const SIG_EOCD: u32 = 0x0605_4b50;

fn local_header(name: &str, size: u32) -> Vec<u8> {
    let mut v = SIG_LOCAL.to_le_bytes().to_vec();
    v.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&(name.len() as u16).to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(name.as_bytes());
    v
}

/// A central entry; `offset` above u32 goes into a Zip64 extra field.
fn central(name: &str, size: u32, offset: u64) -> Vec<u8> {
    let mut v = SIG_CENTRAL.to_le_bytes().to_vec();
    v.extend_from_slice(&[20, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&(name.len() as u16).to_le_bytes());
    let big = offset > u64::from(u32::MAX - 1);
    v.extend_from_slice(&(if big { 12u16 } else { 0 }).to_le_bytes());
    v.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
    v.extend_from_slice(&0u32.to_le_bytes()); // external attributes
    v.extend_from_slice(&(if big { u32::MAX } else { offset as u32 }).to_le_bytes());
    v.extend_from_slice(name.as_bytes());
    if big {
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&8u16.to_le_bytes());
        v.extend_from_slice(&offset.to_le_bytes());
    }
    v
}

/// Zip64 end record + locator + end record with 0xFFFFFFFF fields.
fn zip64_end(entries: u64, cd_offset: u64, cd_size: u64, at: u64) -> Vec<u8> {
    let mut v = 0x0606_4b50u32.to_le_bytes().to_vec();
    v.extend_from_slice(&44u64.to_le_bytes());
    v.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&entries.to_le_bytes());
    v.extend_from_slice(&entries.to_le_bytes());
    v.extend_from_slice(&cd_size.to_le_bytes());
    v.extend_from_slice(&cd_offset.to_le_bytes());
    v.extend_from_slice(&0x0706_4b50u32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&at.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    v.extend_from_slice(&SIG_EOCD.to_le_bytes());
    v.extend_from_slice(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    v.extend_from_slice(&u32::MAX.to_le_bytes());
    v.extend_from_slice(&u32::MAX.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v
}

/// {"w": F32 tensor of 4 elements on storage "0"}, protocol 2, as torch writes it.
const PKL: &[u8] = b"\x80\x02}q\x00X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRs.";

/// A file made of segments at given offsets, zeros elsewhere: a 5 GiB zip without 5 GiB.
struct Sparse {
    len: u64,
    segs: BTreeMap<u64, Vec<u8>>,
}

impl Sparse {
    fn serve(&self, start: u64, len: u64) -> Vec<u8> {
        assert!(
            len <= 1 << 20,
            "a {len}-byte read: the reader must never read tensor data"
        );
        let mut out = vec![0u8; len as usize];
        for (&s, b) in &self.segs {
            for (i, &x) in b.iter().enumerate() {
                let at = s + i as u64;
                if at >= start && at < start + len {
                    out[(at - start) as usize] = x;
                }
            }
        }
        out
    }

    fn inspect(&self) -> (Inspection, u64) {
        let mut r = Reader::new(self.len);
        let mut served = 0;
        loop {
            match r.step() {
                Next::NeedRange { start, len } => {
                    assert!(start + len <= self.len);
                    served += len;
                    r.supply(start, self.serve(start, len));
                }
                Next::Done(i) => return (*i, served),
            }
        }
    }
}

#[test]
fn zip64_storage_past_4_gib() {
    let big: u64 = 5 << 30;
    let mut head = local_header("a/data.pkl", PKL.len() as u32);
    head.extend_from_slice(PKL);
    let mut store = local_header("a/data/0", 16);
    store.extend_from_slice(&[0x3f; 16]);
    let cd_offset = big + store.len() as u64;
    let mut cd = central("a/data.pkl", PKL.len() as u32, 0);
    cd.extend(central("a/data/0", 16, big));
    let end_at = cd_offset + cd.len() as u64;
    let end = zip64_end(2, cd_offset, cd.len() as u64, end_at);
    let mut segs = BTreeMap::new();
    segs.insert(0, head);
    segs.insert(big, store);
    segs.insert(cd_offset, cd);
    let len = end_at + end.len() as u64;
    segs.insert(end_at, end);
    let f = Sparse { len, segs };
    let (i, served) = f.inspect();
    assert_eq!(i.format, Container::PytorchZip, "{:#?}", i.findings);
    assert_eq!(i.safety.verdict, Verdict::Safe, "{:#?}", i.findings);
    let t = &i.tensors[0];
    assert_eq!(
        (t.name.as_str(), t.dtype.as_str(), t.shape.clone()),
        ("w", "F32", vec![4])
    );
    assert_eq!(t.start, Some(big + 30 + 8));
    assert_eq!(t.end, Some(big + 30 + 8 + 16));
    assert!(served < 16 << 10, "served {served}");
    // converted: the piece points past 4 GiB, nothing was copied
    let plan = convert::plan(&i).unwrap();
    assert_eq!(plan.pieces[0].src_start, big + 38);
}

#[test]
fn long_comment_needs_the_whole_window() {
    let mut z = local_header("a/data.pkl", PKL.len() as u32);
    z.extend_from_slice(PKL);
    let s0 = z.len();
    z.extend(local_header("a/data/0", 16));
    z.extend_from_slice(&[0; 16]);
    let cd_offset = z.len();
    let mut cd = central("a/data.pkl", PKL.len() as u32, 0);
    cd.extend(central("a/data/0", 16, s0 as u64));
    z.extend_from_slice(&cd);
    z.extend_from_slice(&SIG_EOCD.to_le_bytes());
    z.extend_from_slice(&[0, 0, 0, 0, 2, 0, 2, 0]);
    z.extend_from_slice(&(cd.len() as u32).to_le_bytes());
    z.extend_from_slice(&(cd_offset as u32).to_le_bytes());
    let comment = vec![b'c'; 40_000];
    z.extend_from_slice(&(comment.len() as u16).to_le_bytes());
    z.extend_from_slice(&comment);
    let (i, _) = parse_all(&z);
    assert_eq!(i.tensors.len(), 1, "{:#?}", i.findings);
    assert_eq!(i.safety.verdict, Verdict::Safe);
}

#[test]
fn a_truncated_file_is_never_safe() {
    // every safe fixture cut at 48 points: never "safe", never a panic
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle");
    let names = [
        "state_dict.pt",
        "state_dict_legacy.pt",
        "shared_views_legacy.pt",
        "v3_dtypes.pt",
        "params_p4.pt",
        "lightning.ckpt",
        "plain_p0.pkl",
        "plain_p2.pkl",
        "plain_p5.pkl",
        "f32.npy",
        "i16_v2.npy",
        "arrays.npz",
        "object.npz",
    ];
    for name in names {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let (whole, _) = parse_all(&bytes);
        assert_eq!(whole.safety.verdict, Verdict::Safe, "{name}");
        for k in 0..48 {
            let cut = bytes.len() * k / 48;
            let (i, _) = parse_all(&bytes[..cut]);
            assert_ne!(
                i.safety.verdict,
                Verdict::Safe,
                "{name} cut at {cut}: {:#?}",
                i.tensors
            );
            assert!(!i.ok(), "{name} cut at {cut}");
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    // a deterministic byte-flip sweep over a torch zip, a legacy file and a pickle
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle");
    for name in [
        "state_dict.pt",
        "state_dict_legacy.pt",
        "plain_p4.pkl",
        "object.npz",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            let mut b = bytes.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x % b.len() as u64) as usize;
                b[at] = (x >> 32) as u8;
            }
            let (i, _) = parse_all(&b);
            let _ = convert::plan(&i);
        }
    }
}

#[test]
fn sniffs_containers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pickle");
    let head = |n: &str| std::fs::read(dir.join(n)).unwrap();
    assert_eq!(sniff(&head("state_dict.pt")), Some(Container::PytorchZip));
    assert_eq!(
        sniff(&head("state_dict_legacy.pt")),
        Some(Container::PytorchLegacy)
    );
    assert_eq!(sniff(&head("plain_p4.pkl")), Some(Container::Pickle));
    assert_eq!(sniff(&head("f32.npy")), Some(Container::Npy));
    assert_eq!(sniff(&head("plain_p0.pkl")), None);
    assert_eq!(sniff(b""), None);
}
