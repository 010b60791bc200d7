//! Bin-packing instances: lookup in the embedded Scholl, Klein & Juergens
//! data sets, and the Martello-Toth L2 lower bound on the number of bins.
//!
//! ```text
//!   "scholl:N1C1W1_A" ─► scan the headers of data/scholl/bin{1,2,3}data.txt
//!                        ─► parse that instance's size line ─► Instance
//!   Instance ─► lower_bound_l2() (search can stop when it reaches it)
//! ```
//!
//! The data files are the original `.BPP` files concatenated, one instance
//! as two lines: `<name> <item count n> <capacity C>`, then the n item sizes
//! (lines starting with `#` are comments).

use crate::common::WorkError;

/// Scholl, Klein & Juergens (1997) data sets 1, 2 and 3, concatenated.
const SCHOLL_SETS: [&str; 3] = [
    include_str!("../../data/scholl/bin1data.txt"),
    include_str!("../../data/scholl/bin2data.txt"),
    include_str!("../../data/scholl/bin3data.txt"),
];

/// One bin-packing problem: put every item into bins of `capacity`, using
/// as few bins as possible.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Instance {
    pub(super) name: String,
    pub(super) capacity: u64,
    pub(super) sizes: Vec<u64>,
}

impl Instance {
    /// Checks that the instance can be packed: at least one item, every size
    /// between 1 and the capacity.
    pub(super) fn new(name: String, capacity: u64, sizes: Vec<u64>) -> Result<Instance, WorkError> {
        if sizes.is_empty() {
            return Err(WorkError::BadInput(format!("bin-packing instance {name} has no items")));
        }
        if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > capacity) {
            return Err(WorkError::BadInput(format!(
                "bin-packing instance {name}: item size {bad} is not between 1 and the capacity {capacity}"
            )));
        }
        Ok(Instance { name, capacity, sizes })
    }

    /// Looks up `scholl:NAME` in the embedded data sets.
    pub(super) fn from_spec(spec: &str) -> Result<Instance, WorkError> {
        let Some(name) = spec.strip_prefix("scholl:") else {
            return Err(WorkError::BadInput(format!(
                "unknown bin-packing instance '{spec}': expected scholl:NAME, e.g. scholl:N1C1W1_A"
            )));
        };
        for text in SCHOLL_SETS {
            let mut lines = text.lines().filter(|line| !line.starts_with('#'));
            while let Some(header) = lines.next() {
                let sizes_line = lines.next().unwrap_or("");
                if header.split_whitespace().next() == Some(name) {
                    return parse_instance(header, sizes_line);
                }
            }
        }
        Err(WorkError::BadInput(format!(
            "no Scholl instance named '{name}': names look like N1C1W1_A (set 1), N1W1B1R0 (set 2), HARD0 (set 3)"
        )))
    }

    /// Martello and Toth's (1990) lower bound L2: for every threshold K up
    /// to C/2, items bigger than C-K need a bin each, items in (C/2, C-K]
    /// too, and the items in [K, C/2] fill those bins' free space and then
    /// whole bins. L2 is the best of these bounds (K = 0 gives at least
    /// the continuous bound ceil(sum / C)).
    pub(super) fn lower_bound_l2(&self) -> u64 {
        let c = self.capacity;
        let mut thresholds: Vec<u64> = self.sizes.iter().copied().filter(|&s| 2 * s <= c).collect();
        thresholds.push(0);
        thresholds.sort_unstable();
        thresholds.dedup();
        thresholds
            .into_iter()
            .map(|k| {
                let mut big = 0; // sizes > C - K: nothing else fits beside them
                let mut medium = 0; // C/2 < size <= C - K
                let mut medium_sum = 0;
                let mut small_sum = 0; // K <= size <= C/2
                for &s in &self.sizes {
                    if s > c - k {
                        big += 1;
                    } else if 2 * s > c {
                        medium += 1;
                        medium_sum += s;
                    } else if s >= k {
                        small_sum += s;
                    }
                }
                let room_beside_medium = medium * c - medium_sum;
                big + medium + small_sum.saturating_sub(room_beside_medium).div_ceil(c)
            })
            .max()
            .unwrap_or(0)
    }
}

/// Parses one instance from its header line and its size line.
fn parse_instance(header: &str, sizes_line: &str) -> Result<Instance, WorkError> {
    let bad = |what: &str| WorkError::BadInput(format!("embedded Scholl data, instance line '{header}': {what}"));
    let fields: Vec<&str> = header.split_whitespace().collect();
    let [name, count, capacity] = fields[..] else {
        return Err(bad("expected '<name> <item count> <capacity>'"));
    };
    let count: usize = count.parse().map_err(|_| bad("item count is not a number"))?;
    let capacity: u64 = capacity.parse().map_err(|_| bad("capacity is not a number"))?;
    let sizes = sizes_line
        .split_whitespace()
        .map(|s| s.parse::<u64>().map_err(|_| bad("an item size is not a number")))
        .collect::<Result<Vec<_>, _>>()?;
    if sizes.len() != count {
        return Err(bad(&format!("{} item sizes listed, {count} announced", sizes.len())));
    }
    Instance::new(name.to_string(), capacity, sizes)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn instance(capacity: u64, sizes: &[u64]) -> Instance {
        Instance::new("hand".into(), capacity, sizes.to_vec()).expect("valid instance")
    }

    /// Fewest bins, by exhaustive search (tiny instances only).
    pub(in crate::binpack) fn optimum_by_exhaustive_search(inst: &Instance) -> u64 {
        fn place(item: usize, sizes: &[u64], capacity: u64, loads: &mut Vec<u64>, best: &mut usize) {
            if loads.len() >= *best {
                return;
            }
            if item == sizes.len() {
                *best = loads.len();
                return;
            }
            for b in 0..loads.len() {
                if loads[b] + sizes[item] <= capacity {
                    loads[b] += sizes[item];
                    place(item + 1, sizes, capacity, loads, best);
                    loads[b] -= sizes[item];
                }
            }
            loads.push(sizes[item]);
            place(item + 1, sizes, capacity, loads, best);
            loads.pop();
        }
        let mut best = inst.sizes.len() + 1;
        place(0, &inst.sizes, inst.capacity, &mut Vec::new(), &mut best);
        best as u64
    }

    #[test]
    fn each_data_set_holds_its_published_instance_count() {
        for (text, expected) in SCHOLL_SETS.iter().zip([720, 480, 10]) {
            let mut lines = text.lines().filter(|line| !line.starts_with('#'));
            let mut names = std::collections::BTreeSet::new();
            while let Some(header) = lines.next() {
                let inst = parse_instance(header, lines.next().unwrap_or("")).expect("embedded instance parses");
                assert!(names.insert(inst.name.clone()), "duplicate {}", inst.name);
            }
            assert_eq!(names.len(), expected);
        }
    }

    #[test]
    fn looks_up_instances_of_every_set() {
        let first = Instance::from_spec("scholl:N1C1W1_A").expect("set 1");
        assert_eq!((first.sizes.len(), first.capacity), (50, 100));
        assert_eq!(&first.sizes[..3], &[99, 99, 96]);
        let second = Instance::from_spec("scholl:N1W1B1R0").expect("set 2");
        assert_eq!((second.sizes.len(), second.capacity), (50, 1000));
        let hard = Instance::from_spec("scholl:HARD0").expect("set 3");
        assert_eq!((hard.sizes.len(), hard.capacity), (200, 100_000));
        assert_eq!(hard.sizes[0], 34978);
    }

    #[test]
    fn rejects_unknown_names_and_sources() {
        assert!(Instance::from_spec("scholl:NOPE").is_err());
        assert!(Instance::from_spec("N1C1W1_A").is_err());
        assert!(Instance::new("x".into(), 10, vec![11]).is_err());
        assert!(Instance::new("x".into(), 10, vec![]).is_err());
    }

    #[test]
    fn l2_on_hand_examples() {
        // Three items over half the capacity: one bin each, though the total needs only 2.
        assert_eq!(instance(10, &[6, 6, 6]).lower_bound_l2(), 3);
        // K = 45: both 60s need their own bin, the three 45s fill 135 more units: 2 + 2.
        assert_eq!(instance(100, &[60, 60, 45, 45, 45]).lower_bound_l2(), 4);
        // Only the continuous bound bites: 25 units in bins of 10.
        assert_eq!(instance(10, &[5, 5, 5, 5, 5]).lower_bound_l2(), 3);
        // Room beside the big items absorbs the small ones.
        assert_eq!(instance(10, &[7, 7, 3, 3]).lower_bound_l2(), 2);
        assert_eq!(instance(10, &[10]).lower_bound_l2(), 1);
    }

    #[test]
    fn l2_of_scholl_instances_is_at_least_the_continuous_bound() {
        for name in ["N1C1W1_A", "N4C3W4_T", "N2W4B3R9", "HARD7"] {
            let inst = Instance::from_spec(&format!("scholl:{name}")).expect("exists");
            let continuous = inst.sizes.iter().sum::<u64>().div_ceil(inst.capacity);
            assert!(inst.lower_bound_l2() >= continuous, "{name}");
        }
    }

    proptest! {
        #[test]
        fn l2_never_exceeds_the_optimum(capacity in 5u64..40, raw in prop::collection::vec(1u64..1000, 1..8)) {
            let sizes: Vec<u64> = raw.iter().map(|r| 1 + r % capacity).collect();
            let inst = instance(capacity, &sizes);
            let continuous = sizes.iter().sum::<u64>().div_ceil(capacity);
            let l2 = inst.lower_bound_l2();
            prop_assert!(l2 >= continuous);
            prop_assert!(l2 <= optimum_by_exhaustive_search(&inst));
        }
    }
}
