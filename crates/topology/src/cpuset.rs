//! `CpuSet`: the project's one set-of-CPUs type, and its list syntax.
//!
//! A CPU set is a bitset of CPU numbers (the OS indices that
//! `sched_setaffinity` takes). Text flows in and out of it in the list syntax
//! of taskset/numactl and of `/sys/devices/system/cpu/online`:
//!
//! ```text
//!   "0-3, 8,10-14:2"  --parse_list/FromStr/serde-->  CpuSet {0,1,2,3,8,10,12,14}
//!   CpuSet {0,1,2,3,8,10,12,14}  --Display/serde-->   "0-3,8,10,12,14"
//! ```
//!
//! Parsing accepts comma-separated items `N`, `A-B` and `A-B:STRIDE`;
//! printing is canonical (ascending, every run of two or more consecutive
//! CPUs as `A-B`, no strides), so two equal sets always print the same text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// CPU numbers in a parsed list must be below this (Linux's largest
/// `CONFIG_NR_CPUS`).
const MAX_CPU_IN_LIST: usize = 8192;

const WORD_BITS: usize = u64::BITS as usize;

/// What is wrong with a CPU list such as `0-3,8`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CpuListError {
    #[error("the CPU list is empty; give CPU numbers such as \"0-3,8\"")]
    Empty,
    #[error(
        "the CPU list {list:?} has an empty item; separate CPU numbers and ranges with single commas, as in \"0-3,8\""
    )]
    EmptyItem { list: String },
    #[error(
        "{text:?} in CPU list item {item:?} is not a CPU number; each item must be N, A-B or A-B:STRIDE with decimal numbers"
    )]
    NotANumber { item: String, text: String },
    #[error("CPU list item {item:?} is missing a number; each item must be N, A-B or A-B:STRIDE")]
    MissingNumber { item: String },
    #[error("CPU list item {item:?} has a stride but no range; write A-B:STRIDE, as in 0-15:2")]
    StrideWithoutRange { item: String },
    #[error("the range {item:?} in the CPU list runs backwards ({start} > {end}); write it as {end}-{start}")]
    ReversedRange { item: String, start: usize, end: usize },
    #[error("the stride in CPU list item {item:?} is 0; the stride after ':' must be at least 1")]
    ZeroStride { item: String },
    #[error("CPU {cpu} in CPU list item {item:?} is too large; CPU numbers must be below {MAX_CPU_IN_LIST}")]
    TooLarge { item: String, cpu: usize },
}

/// A set of CPU numbers (OS indices), stored as a bitset.
///
/// Invariant: `words` has no trailing zero word, so equal sets have equal
/// representations (derived `Eq`/`Hash` are correct).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the taskset/numactl list syntax: comma-separated items `N`,
    /// `A-B` (inclusive) or `A-B:STRIDE`, with optional whitespace around the
    /// list and around each item.
    pub fn parse_list(list: &str) -> Result<CpuSet, CpuListError> {
        let trimmed = list.trim();
        if trimmed.is_empty() {
            return Err(CpuListError::Empty);
        }
        let mut set = CpuSet::new();
        for raw_item in trimmed.split(',') {
            let item = raw_item.trim();
            if item.is_empty() {
                return Err(CpuListError::EmptyItem {
                    list: trimmed.to_string(),
                });
            }
            let (range, stride) = match item.split_once(':') {
                Some((range, stride)) => (range, Some(stride)),
                None => (item, None),
            };
            let (start, end) = match range.split_once('-') {
                Some((start, end)) => (parse_cpu_number(item, start)?, parse_cpu_number(item, end)?),
                None => {
                    if stride.is_some() {
                        return Err(CpuListError::StrideWithoutRange { item: item.to_string() });
                    }
                    let cpu = parse_cpu_number(item, range)?;
                    (cpu, cpu)
                }
            };
            if start > end {
                return Err(CpuListError::ReversedRange {
                    item: item.to_string(),
                    start,
                    end,
                });
            }
            let stride = match stride {
                Some(text) => parse_number(item, text)?,
                None => 1,
            };
            if stride == 0 {
                return Err(CpuListError::ZeroStride { item: item.to_string() });
            }
            for cpu in (start..=end).step_by(stride) {
                set.insert(cpu);
            }
        }
        Ok(set)
    }

    /// Adds `cpu`; returns whether it was newly added.
    pub fn insert(&mut self, cpu: usize) -> bool {
        let (word, bit) = (cpu / WORD_BITS, cpu % WORD_BITS);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let was_absent = self.words[word] & (1 << bit) == 0;
        self.words[word] |= 1 << bit;
        was_absent
    }

    /// The set whose CPU `64 * w + b` is bit `b` of `words[w]` (the layout of
    /// the kernel's `cpu_set_t` on 64-bit machines).
    pub fn from_words(words: &[u64]) -> Self {
        let used = words.iter().rposition(|&w| w != 0).map_or(0, |last| last + 1);
        CpuSet {
            words: words[..used].to_vec(),
        }
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: usize) -> bool {
        let was_present = self.contains(cpu);
        if was_present {
            self.words[cpu / WORD_BITS] &= !(1 << (cpu % WORD_BITS));
            self.trim();
        }
        was_present
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / WORD_BITS)
            .is_some_and(|word| word & (1 << (cpu % WORD_BITS)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|word| word.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            word_index: 0,
            remaining: self.words.first().copied().unwrap_or(0),
        }
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<usize> {
        let top = self.words.len().checked_sub(1)?;
        let word = self.words[top];
        Some(top * WORD_BITS + (WORD_BITS - 1 - word.leading_zeros() as usize))
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let (longer, shorter) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = longer.words.clone();
        for (word, other_word) in words.iter_mut().zip(&shorter.words) {
            *word |= other_word;
        }
        CpuSet { words }
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect();
        let mut set = CpuSet { words };
        set.trim();
        set
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let words = self
            .words
            .iter()
            .enumerate()
            .map(|(index, word)| word & !other.words.get(index).copied().unwrap_or(0))
            .collect();
        let mut set = CpuSet { words };
        set.trim();
        set
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(index, word)| word & !other.words.get(index).copied().unwrap_or(0) == 0)
    }

    /// Whether `self` and `other` share no CPU.
    pub fn is_disjoint(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).all(|(a, b)| a & b == 0)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

/// Parses one CPU number of an item, enforcing the 8192 limit.
fn parse_cpu_number(item: &str, text: &str) -> Result<usize, CpuListError> {
    let cpu = parse_number(item, text)?;
    if cpu >= MAX_CPU_IN_LIST {
        return Err(CpuListError::TooLarge {
            item: item.to_string(),
            cpu,
        });
    }
    Ok(cpu)
}

/// Parses plain decimal digits (no sign, no inner spaces).
fn parse_number(item: &str, text: &str) -> Result<usize, CpuListError> {
    if text.is_empty() {
        return Err(CpuListError::MissingNumber { item: item.to_string() });
    }
    if !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(CpuListError::NotANumber {
            item: item.to_string(),
            text: text.to_string(),
        });
    }
    // Only digits: the one way to fail is overflow, which is also too large.
    text.parse::<usize>().map_err(|_| CpuListError::TooLarge {
        item: item.to_string(),
        cpu: usize::MAX,
    })
}

/// Ascending iterator over the CPUs of a [`CpuSet`].
#[derive(Clone)]
pub struct Iter<'a> {
    words: &'a [u64],
    word_index: usize,
    remaining: u64,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.remaining == 0 {
            self.word_index += 1;
            self.remaining = *self.words.get(self.word_index)?;
        }
        let bit = self.remaining.trailing_zeros() as usize;
        self.remaining &= self.remaining - 1;
        Some(self.word_index * WORD_BITS + bit)
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = usize;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(cpus: I) -> Self {
        let mut set = CpuSet::new();
        set.extend(cpus);
        set
    }
}

impl Extend<usize> for CpuSet {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, cpus: I) {
        for cpu in cpus {
            self.insert(cpu);
        }
    }
}

/// Sets order like their ascending CPU lists compared lexicographically
/// (as `BTreeSet<usize>` does): `{0,5} < {1} < {1,2}`.
impl Ord for CpuSet {
    fn cmp(&self, other: &Self) -> Ordering {
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for CpuSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Canonical list syntax: `0-3,8`; the empty set prints as nothing.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.iter().peekable();
        let mut first_item = true;
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.next_if_eq(&(end + 1)).is_some() {
                end += 1;
            }
            if !first_item {
                f.write_str(",")?;
            }
            first_item = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;

    fn from_str(list: &str) -> Result<Self, CpuListError> {
        CpuSet::parse_list(list)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Deserialises from the list string; the empty string is the empty set
/// (that is what serialising an empty set writes).
impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let list = String::deserialize(deserializer)?;
        if list.trim().is_empty() {
            return Ok(CpuSet::new());
        }
        CpuSet::parse_list(&list).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(cpus: &[usize]) -> CpuSet {
        cpus.iter().copied().collect()
    }

    #[test]
    fn parses_every_item_form() {
        assert_eq!(CpuSet::parse_list("5").unwrap(), set(&[5]));
        assert_eq!(CpuSet::parse_list("0-3").unwrap(), set(&[0, 1, 2, 3]));
        assert_eq!(CpuSet::parse_list("0-10:3").unwrap(), set(&[0, 3, 6, 9]));
        assert_eq!(CpuSet::parse_list("4-4").unwrap(), set(&[4]));
        assert_eq!(CpuSet::parse_list("  8, 0-1 ,3\n").unwrap(), set(&[0, 1, 3, 8]));
        assert_eq!(CpuSet::parse_list("8191").unwrap(), set(&[8191]));
    }

    #[test]
    fn words_in_the_kernel_layout_make_the_same_set_as_its_cpus() {
        let mut words = [0u64; 128];
        words[0] = 0b1011;
        words[2] = 1 << 63;
        let set = CpuSet::from_words(&words);
        assert_eq!(set, CpuSet::parse_list("0-1,3,191").unwrap());
        assert_eq!(
            set,
            [0, 1, 3, 191].into_iter().collect::<CpuSet>(),
            "trailing zero words trimmed"
        );
        assert!(CpuSet::from_words(&[0; 4]).is_empty());
        assert_eq!(CpuSet::from_words(&[0; 4]), CpuSet::new());
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(CpuSet::parse_list("3,1-2,0").unwrap().to_string(), "0-3");
        assert_eq!(CpuSet::parse_list("8,0-3,2").unwrap().to_string(), "0-3,8");
        assert_eq!(CpuSet::parse_list("0-6:2").unwrap().to_string(), "0,2,4,6");
        assert_eq!(CpuSet::parse_list("5,6").unwrap().to_string(), "5-6");
        assert_eq!(set(&[5]).to_string(), "5");
        assert_eq!(CpuSet::new().to_string(), "");
        assert_eq!(format!("{:?}", set(&[0, 1, 7])), "CpuSet(0-1,7)");
    }

    fn parse_error(list: &str) -> (CpuListError, String) {
        let error = CpuSet::parse_list(list).unwrap_err();
        let message = error.to_string();
        (error, message)
    }

    #[test]
    fn rejects_empty_input() {
        for list in ["", "   ", "\n"] {
            let (error, message) = parse_error(list);
            assert_eq!(error, CpuListError::Empty);
            assert!(message.contains("empty"), "{message}");
        }
    }

    #[test]
    fn rejects_empty_items() {
        for list in ["0,,2", "0,", ",1", "1, ,2"] {
            let (error, message) = parse_error(list);
            assert!(matches!(error, CpuListError::EmptyItem { .. }), "{list}: {error:?}");
            assert!(message.contains("empty item"), "{message}");
            assert!(message.contains(list.trim()), "{message}");
        }
    }

    #[test]
    fn rejects_non_numbers_naming_the_item() {
        for (list, item, text) in [
            ("x", "x", "x"),
            ("0,a-3", "a-3", "a"),
            ("+3", "+3", "+3"),
            ("1 2", "1 2", "1 2"),
            ("0-3:x", "0-3:x", "x"),
            ("0-1-2", "0-1-2", "1-2"),
            ("0-3:2:1", "0-3:2:1", "2:1"),
        ] {
            let (error, message) = parse_error(list);
            assert_eq!(
                error,
                CpuListError::NotANumber {
                    item: item.into(),
                    text: text.into()
                }
            );
            assert!(message.contains(&format!("item {item:?}")), "{message}");
            assert!(message.contains("not a CPU number"), "{message}");
        }
    }

    #[test]
    fn rejects_missing_numbers() {
        for list in ["1-", "-3", "-", "0-3:"] {
            let (error, message) = parse_error(list);
            assert_eq!(error, CpuListError::MissingNumber { item: list.into() });
            assert!(message.contains("missing a number"), "{message}");
            assert!(message.contains(&format!("{list:?}")), "{message}");
        }
    }

    #[test]
    fn rejects_a_stride_without_a_range() {
        let (error, message) = parse_error("3:2");
        assert_eq!(error, CpuListError::StrideWithoutRange { item: "3:2".into() });
        assert!(message.contains("no range"), "{message}");
    }

    #[test]
    fn rejects_reversed_ranges() {
        let (error, message) = parse_error("0,5-3");
        assert_eq!(
            error,
            CpuListError::ReversedRange {
                item: "5-3".into(),
                start: 5,
                end: 3
            }
        );
        assert!(message.contains("backwards") && message.contains("3-5"), "{message}");
    }

    #[test]
    fn rejects_zero_stride() {
        let (error, message) = parse_error("0-7:0");
        assert_eq!(error, CpuListError::ZeroStride { item: "0-7:0".into() });
        assert!(message.contains("stride") && message.contains("0-7:0"), "{message}");
    }

    #[test]
    fn rejects_cpus_at_or_above_8192() {
        for (list, cpu) in [
            ("8192", 8192),
            ("0-9000", 9000),
            ("99999999999999999999999", usize::MAX),
        ] {
            let (error, message) = parse_error(list);
            assert_eq!(error, CpuListError::TooLarge { item: list.into(), cpu });
            assert!(message.contains("below 8192"), "{message}");
        }
    }

    #[test]
    fn set_operations() {
        let a = set(&[0, 1, 2, 70]);
        let b = set(&[2, 3, 70, 130]);
        assert_eq!(a.union(&b), set(&[0, 1, 2, 3, 70, 130]));
        assert_eq!(a.intersection(&b), set(&[2, 70]));
        assert_eq!(a.difference(&b), set(&[0, 1]));
        assert_eq!(b.difference(&a), set(&[3, 130]));
        assert!(set(&[2, 70]).is_subset(&a));
        assert!(!b.is_subset(&a));
        assert!(CpuSet::new().is_subset(&a));
        assert!(a.is_disjoint(&set(&[5, 129])));
        assert!(!a.is_disjoint(&b));
        assert_eq!(a.len(), 4);
        assert_eq!(a.first(), Some(0));
        assert_eq!(b.first(), Some(2));
        assert_eq!(b.last(), Some(130));
        assert_eq!(CpuSet::new().first(), None);
        assert_eq!(CpuSet::new().last(), None);
        assert!(a.contains(70) && !a.contains(69) && !a.contains(100_000));
    }

    #[test]
    fn removing_high_cpus_keeps_equality_and_hash_consistent() {
        let mut grown = set(&[1, 200]);
        assert!(grown.remove(200));
        assert!(!grown.remove(200));
        assert_eq!(grown, set(&[1]));
        assert_eq!(set(&[1, 300]).intersection(&set(&[1])), set(&[1]));
        assert_eq!(set(&[1, 300]).difference(&set(&[300])), set(&[1]));
        let mut emptied = set(&[64]);
        emptied.remove(64);
        assert!(emptied.is_empty());
        assert_eq!(emptied, CpuSet::new());
    }

    #[test]
    fn orders_like_sorted_cpu_lists() {
        let mut sets = vec![set(&[1, 2]), set(&[1]), set(&[0, 5]), set(&[]), set(&[64])];
        sets.sort();
        assert_eq!(sets, vec![set(&[]), set(&[0, 5]), set(&[1]), set(&[1, 2]), set(&[64])]);
    }

    #[test]
    fn serde_uses_the_list_string() {
        let value = set(&[0, 1, 2, 3, 8]);
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(json, "\"0-3,8\"");
        assert_eq!(serde_json::from_str::<CpuSet>(&json).unwrap(), value);
        assert_eq!(serde_json::to_string(&CpuSet::new()).unwrap(), "\"\"");
        assert_eq!(serde_json::from_str::<CpuSet>("\"\"").unwrap(), CpuSet::new());
        let error = serde_json::from_str::<CpuSet>("\"3-1\"").unwrap_err();
        assert!(error.to_string().contains("backwards"), "{error}");
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(cpus in proptest::collection::btree_set(0usize..MAX_CPU_IN_LIST, 1..200)) {
            let original: CpuSet = cpus.iter().copied().collect();
            let text = original.to_string();
            let parsed = CpuSet::parse_list(&text).unwrap();
            prop_assert_eq!(&parsed, &original);
            prop_assert_eq!(parsed.iter().collect::<Vec<_>>(), cpus.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(original.len(), cpus.len());
        }

        #[test]
        fn equivalent_inputs_print_the_same(cpus in proptest::collection::vec(0usize..300, 1..60)) {
            // The same CPUs as singletons in arbitrary order with duplicates
            // print exactly like the sorted, deduplicated set.
            let scrambled = cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
            let from_scrambled = CpuSet::parse_list(&scrambled).unwrap();
            let sorted: std::collections::BTreeSet<usize> = cpus.iter().copied().collect();
            let from_sorted: CpuSet = sorted.iter().copied().collect();
            prop_assert_eq!(from_scrambled.to_string(), from_sorted.to_string());
            // Canonical form is a fixed point.
            prop_assert_eq!(CpuSet::parse_list(&from_sorted.to_string()).unwrap().to_string(), from_sorted.to_string());
        }

        #[test]
        fn set_operations_match_btreeset(
            a in proptest::collection::btree_set(0usize..500, 0..50),
            b in proptest::collection::btree_set(0usize..500, 0..50),
        ) {
            let (set_a, set_b): (CpuSet, CpuSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(set_a.union(&set_b).iter().collect::<Vec<_>>(), a.union(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(set_a.intersection(&set_b).iter().collect::<Vec<_>>(), a.intersection(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(set_a.difference(&set_b).iter().collect::<Vec<_>>(), a.difference(&b).copied().collect::<Vec<_>>());
            prop_assert_eq!(set_a.is_subset(&set_b), a.is_subset(&b));
            prop_assert_eq!(set_a.is_disjoint(&set_b), a.is_disjoint(&b));
            prop_assert_eq!(set_a.cmp(&set_b), a.cmp(&b));
        }
    }
}
