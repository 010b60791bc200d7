//! Fuzzing the channel reader with proptest: a supervised program controls
//! its channel file, so whatever bytes it holds, opening and reading it
//! never panics, and a rejection is one line naming the file.
//!
//! Cases: `PINLEARN_FUZZ_CASES` (default 2000, what CI runs); the documented
//! long run (docs/reliability.md) sets it to 1000000.

use pinlearn_heartbeat::{HEADER_BYTES, HeartbeatReader, MAGIC, SLOT_BYTES, VERSION, channel_path_in};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PINLEARN_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

/// A header that is mostly right (so the reader gets past the magic), with
/// fields and length drawn at random, or bytes at random.
fn channel_bytes(pid: u32) -> impl Strategy<Value = Vec<u8>> {
    let plausible = (
        prop_oneof![Just(VERSION), any::<u32>()],
        prop_oneof![0u32..8, any::<u32>()],
        prop_oneof![Just(pid), any::<u32>()],
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(version, slots, header_pid, ticks, tail)| {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&version.to_ne_bytes());
            bytes.extend_from_slice(&slots.to_ne_bytes());
            bytes.extend_from_slice(&header_pid.to_ne_bytes());
            bytes.extend_from_slice(&0u32.to_ne_bytes());
            bytes.extend_from_slice(&(ticks % 2).to_ne_bytes()); // 0 or 1: stale or unknown start
            bytes.extend_from_slice(&tail);
            bytes
        });
    prop_oneof![
        plausible,
        proptest::collection::vec(any::<u8>(), 0..HEADER_BYTES + 4 * SLOT_BYTES)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_channel_file_opens_and_reads_or_says_why(
        bytes in channel_bytes(std::process::id()),
        cut in proptest::option::of(0usize..300),
    ) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
        let path = channel_path_in(dir.path(), pid);
        std::fs::write(&path, &bytes).expect("write");
        match HeartbeatReader::open_in(dir.path(), pid) {
            Ok(Some(mut reader)) => {
                // The program cuts or grows its file between two reads.
                if let Some(len) = cut {
                    std::fs::File::options().write(true).open(&path).expect("open").set_len(len as u64).expect("resize");
                }
                let mut out = Vec::new();
                match reader.read_into(&mut out) {
                    Ok(()) => prop_assert!(out.len() <= reader.slot_count() as usize),
                    Err(error) => prop_assert!(!error.to_string().contains('\n')),
                }
            }
            Ok(None) => {}
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("pinlearn-heartbeat") && !message.contains('\n'), "{:?}", message);
            }
        }
    }
}

/// A bubble channel: a right header (or bytes at random) and records that
/// are mostly well formed (a known operation, text within bounds) or not.
fn bubble_channel_bytes(pid: u32) -> impl Strategy<Value = Vec<u8>> {
    use pinlearn_heartbeat::bubble_channel::{BUBBLE_MAGIC, BUBBLE_VERSION, RECORD_BYTES};
    let record = (
        0u32..11,
        any::<u32>(),
        -2i64..70_000,
        any::<f64>(),
        0u32..40,
        any::<[u8; 32]>(),
    )
        .prop_map(|(op, bubble, arg, value, text_len, text)| {
            let mut record = Vec::with_capacity(RECORD_BYTES);
            record.extend_from_slice(&op.to_ne_bytes());
            record.extend_from_slice(&(bubble % 8).to_ne_bytes());
            record.extend_from_slice(&arg.to_ne_bytes());
            record.extend_from_slice(&value.to_ne_bytes());
            record.extend_from_slice(&text_len.to_ne_bytes());
            record.extend_from_slice(&0u32.to_ne_bytes());
            record.extend_from_slice(&text);
            record
        });
    let plausible =
        (proptest::collection::vec(record, 0..12), 0usize..RECORD_BYTES).prop_map(move |(records, extra)| {
            let mut bytes = BUBBLE_MAGIC.to_vec();
            bytes.extend_from_slice(&BUBBLE_VERSION.to_ne_bytes());
            bytes.extend_from_slice(&(RECORD_BYTES as u32).to_ne_bytes());
            bytes.extend_from_slice(&pid.to_ne_bytes());
            bytes.extend_from_slice(&0u32.to_ne_bytes());
            bytes.extend_from_slice(&0u64.to_ne_bytes());
            for record in records {
                bytes.extend_from_slice(&record);
            }
            bytes.extend(std::iter::repeat_n(0u8, extra % 3 * 7));
            bytes
        });
    prop_oneof![plausible, proptest::collection::vec(any::<u8>(), 0..200)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_bubble_channel_file_reads_or_says_why(
        bytes in bubble_channel_bytes(std::process::id()),
        cut in proptest::option::of(0usize..400),
    ) {
        use pinlearn_heartbeat::bubble_channel::{BubbleChannelReader, bubble_channel_path_in};
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
        let path = bubble_channel_path_in(dir.path(), pid);
        std::fs::write(&path, &bytes).expect("write");
        match BubbleChannelReader::open_in(dir.path(), pid) {
            Ok(Some(mut reader)) => {
                if let Some(len) = cut {
                    std::fs::File::options().write(true).open(&path).expect("open").set_len(len as u64).expect("resize");
                }
                let mut out = Vec::new();
                match reader.read_new(&mut out) {
                    // Whatever decodes is sent back the same.
                    Ok(()) => for op in &out {
                        prop_assert_eq!(pinlearn_heartbeat::BubbleOp::decode(&op.encode().expect("decoded text fits")), Ok(op.clone()));
                    },
                    Err(error) => prop_assert!(!error.to_string().contains('\n')),
                }
            }
            Ok(None) => {}
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("pinlearn-bubbles") && !message.contains('\n'), "{:?}", message);
            }
        }
    }
}
