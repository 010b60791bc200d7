//! A bin-packing solution and the stochastic local search that improves it.
//!
//! ```text
//!   first fit on (noisy) decreasing sizes ─► Packing
//!   Packing ─eliminate_bins()─► empty the least-filled bin (and sometimes a random one)
//!            ─► free items ─► exchanges with the other bins: up to 2 packed items
//!                             out for up to 2 free items in, whenever the bin
//!                             gets fuller (free items get smaller)
//!            ─► best-fit-decreasing of what is left ─► kept unless it needs more bins
//! ```
//!
//! The exchange phase is the local search of Levine & Ducatelle ("Ant colony
//! optimization and local search for bin packing and cutting stock
//! problems", JORS 2004), after Martello and Toth's dominance criterion; the
//! quality of equal-size packings is Falkenauer's: the sum of squared bin
//! loads, which favours full bins and nearly empty ones, the next to go.

use super::instance::Instance;
use rand::Rng;
use rand::seq::SliceRandom;

/// At most this many sweeps over the bins in one exchange phase.
const EXCHANGE_SWEEPS: usize = 4;

/// One bin: the indices of its items and their total size.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Bin {
    pub(super) load: u64,
    pub(super) items: Vec<usize>,
}

/// A complete assignment of every item to a bin.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Packing {
    pub(super) bins: Vec<Bin>,
}

/// A set of at most two items, given by their positions in a list.
#[derive(Debug, Clone, Copy)]
struct ItemSet {
    positions: [usize; 2],
    len: usize,
    size: u64,
}

/// All sets of 0 (when `with_empty`), 1 or 2 items of `items`.
fn item_sets(items: &[usize], sizes: &[u64], with_empty: bool, sets: &mut Vec<ItemSet>) {
    sets.clear();
    if with_empty {
        sets.push(ItemSet {
            positions: [0, 0],
            len: 0,
            size: 0,
        });
    }
    for (a, &item_a) in items.iter().enumerate() {
        sets.push(ItemSet {
            positions: [a, 0],
            len: 1,
            size: sizes[item_a],
        });
        for (b, &item_b) in items.iter().enumerate().skip(a + 1) {
            sets.push(ItemSet {
                positions: [a, b],
                len: 2,
                size: sizes[item_a] + sizes[item_b],
            });
        }
    }
}

/// Removes the items of `set` from `items` and returns them.
fn take(items: &mut Vec<usize>, set: &ItemSet) -> Vec<usize> {
    let mut positions = set.positions[..set.len].to_vec();
    positions.sort_unstable_by(|a, b| b.cmp(a));
    positions.into_iter().map(|p| items.swap_remove(p)).collect()
}

impl Packing {
    /// Puts each item, in `order`, into the first bin with room for it.
    pub(super) fn first_fit(inst: &Instance, order: &[usize]) -> Packing {
        let mut bins: Vec<Bin> = Vec::new();
        for &item in order {
            let size = inst.sizes[item];
            match bins.iter_mut().find(|bin| bin.load + size <= inst.capacity) {
                Some(bin) => {
                    bin.load += size;
                    bin.items.push(item);
                }
                None => bins.push(Bin {
                    load: size,
                    items: vec![item],
                }),
            }
        }
        Packing { bins }
    }

    /// First fit decreasing.
    pub(super) fn first_fit_decreasing(inst: &Instance) -> Packing {
        let mut order: Vec<usize> = (0..inst.sizes.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(inst.sizes[i]));
        Packing::first_fit(inst, &order)
    }

    /// First fit on sizes scaled by random factors in [1, 1.3): nearly
    /// decreasing, different for every call.
    pub(super) fn noisy_first_fit_decreasing(inst: &Instance, rng: &mut impl Rng) -> Packing {
        let mut keyed: Vec<(f64, usize)> = (0..inst.sizes.len())
            .map(|i| (inst.sizes[i] as f64 * rng.random_range(1.0..1.3), i))
            .collect();
        keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
        let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
        Packing::first_fit(inst, &order)
    }

    pub(super) fn bin_count(&self) -> usize {
        self.bins.len()
    }

    /// Sum of squared bin loads: for the same items and bin count, higher
    /// means fuller bins beside emptier ones.
    pub(super) fn fullness(&self) -> u128 {
        self.bins
            .iter()
            .map(|bin| u128::from(bin.load) * u128::from(bin.load))
            .sum()
    }

    /// Fewer bins, or as many and fuller.
    pub(super) fn is_better_than(&self, other: &Packing) -> bool {
        (self.bin_count(), std::cmp::Reverse(self.fullness()))
            < (other.bin_count(), std::cmp::Reverse(other.fullness()))
    }

    /// Every item in exactly one bin, no bin empty or over capacity, every
    /// load the sum of its items.
    pub(super) fn is_valid(&self, inst: &Instance) -> bool {
        let mut seen = vec![false; inst.sizes.len()];
        for bin in &self.bins {
            if bin.items.is_empty() || bin.load > inst.capacity {
                return false;
            }
            let mut load = 0;
            for &item in &bin.items {
                match seen.get_mut(item) {
                    Some(slot) if !*slot => *slot = true,
                    _ => return false,
                }
                load += inst.sizes[item];
            }
            if load != bin.load {
                return false;
            }
        }
        seen.iter().all(|&s| s)
    }

    /// One move: empties the least-filled bin (half of the time also a
    /// random other bin), improves the other bins by exchanges with the freed
    /// items, and repacks what stays free by best fit decreasing. The move is
    /// undone if it ends with more bins than it started with.
    pub(super) fn eliminate_bins(&mut self, inst: &Instance, rng: &mut impl Rng) {
        if self.bins.len() < 2 {
            return;
        }
        let before = self.bins.clone();
        let least = (0..self.bins.len()).min_by_key(|&b| self.bins[b].load).unwrap_or(0);
        let mut free = self.bins.swap_remove(least).items;
        if self.bins.len() >= 2 && rng.random_bool(0.5) {
            let other = rng.random_range(0..self.bins.len());
            free.extend(self.bins.swap_remove(other).items);
        }
        self.exchange_with_free(inst, &mut free, rng);
        free.sort_by_key(|&i| std::cmp::Reverse(inst.sizes[i]));
        for item in free {
            self.insert_best_fit(inst, item);
        }
        if self.bins.len() > before.len() {
            self.bins = before;
        }
    }

    /// Sweeps the bins in random order; in each, makes the exchange of up
    /// to 2 packed items for up to 2 free items that fills the bin most.
    fn exchange_with_free(&mut self, inst: &Instance, free: &mut Vec<usize>, rng: &mut impl Rng) {
        let mut order: Vec<usize> = (0..self.bins.len()).collect();
        let mut packed_sets = Vec::new();
        let mut free_sets = Vec::new();
        for _ in 0..EXCHANGE_SWEEPS {
            order.shuffle(rng);
            let mut improved = false;
            for &b in &order {
                if free.is_empty() {
                    return;
                }
                let bin = &mut self.bins[b];
                let room = inst.capacity - bin.load;
                if room == 0 {
                    continue;
                }
                item_sets(&bin.items, &inst.sizes, true, &mut packed_sets);
                item_sets(free, &inst.sizes, false, &mut free_sets);
                let mut best: Option<(u64, ItemSet, ItemSet)> = None;
                'search: for out in &packed_sets {
                    for into in &free_sets {
                        if into.size > out.size && into.size - out.size <= room {
                            let gain = into.size - out.size;
                            if best.is_none_or(|(g, _, _)| gain > g) {
                                best = Some((gain, *out, *into));
                                if gain == room {
                                    break 'search;
                                }
                            }
                        }
                    }
                }
                if let Some((gain, out, into)) = best {
                    let leaving = take(&mut bin.items, &out);
                    let entering = take(free, &into);
                    bin.items.extend(entering);
                    bin.load += gain;
                    free.extend(leaving);
                    improved = true;
                }
            }
            if !improved {
                return;
            }
        }
    }

    /// Puts `item` into the fullest bin with room for it, or a new bin.
    fn insert_best_fit(&mut self, inst: &Instance, item: usize) {
        let size = inst.sizes[item];
        let fullest = self
            .bins
            .iter_mut()
            .filter(|bin| bin.load + size <= inst.capacity)
            .max_by_key(|bin| bin.load);
        match fullest {
            Some(bin) => {
                bin.load += size;
                bin.items.push(item);
            }
            None => self.bins.push(Bin {
                load: size,
                items: vec![item],
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binpack::instance::tests::optimum_by_exhaustive_search;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn instance(capacity: u64, sizes: Vec<u64>) -> Instance {
        Instance::new("test".into(), capacity, sizes).expect("valid instance")
    }

    #[test]
    fn first_fit_decreasing_on_a_hand_example() {
        let inst = instance(10, vec![2, 5, 4, 7, 1, 3, 8]);
        let packing = Packing::first_fit_decreasing(&inst);
        assert!(packing.is_valid(&inst));
        let loads: Vec<u64> = packing.bins.iter().map(|b| b.load).collect();
        assert_eq!(loads, vec![10, 10, 10]);
    }

    #[test]
    fn validity_check_catches_broken_packings() {
        let inst = instance(10, vec![6, 5, 4]);
        let good = Packing {
            bins: vec![
                Bin {
                    load: 10,
                    items: vec![0, 2],
                },
                Bin {
                    load: 5,
                    items: vec![1],
                },
            ],
        };
        assert!(good.is_valid(&inst));
        let missing = Packing {
            bins: vec![Bin {
                load: 10,
                items: vec![0, 2],
            }],
        };
        assert!(!missing.is_valid(&inst));
        let twice = Packing {
            bins: vec![
                Bin {
                    load: 10,
                    items: vec![0, 2],
                },
                Bin {
                    load: 9,
                    items: vec![1, 2],
                },
            ],
        };
        assert!(!twice.is_valid(&inst));
        let over = Packing {
            bins: vec![
                Bin {
                    load: 11,
                    items: vec![0, 1],
                },
                Bin {
                    load: 4,
                    items: vec![2],
                },
            ],
        };
        assert!(!over.is_valid(&inst));
        let wrong_load = Packing {
            bins: vec![
                Bin {
                    load: 9,
                    items: vec![0, 2],
                },
                Bin {
                    load: 5,
                    items: vec![1],
                },
            ],
        };
        assert!(!wrong_load.is_valid(&inst));
    }

    #[test]
    fn moves_repair_a_bad_first_fit() {
        // First fit in this order packs 4+4, 5+5, 6, 6; 3 bins suffice (6+4, 6+4, 5+5).
        let inst = instance(10, vec![5, 5, 6, 6, 4, 4]);
        let mut packing = Packing::first_fit(&inst, &[4, 5, 0, 1, 2, 3]);
        assert_eq!(packing.bin_count(), 4);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            packing.eliminate_bins(&inst, &mut rng);
            assert!(packing.is_valid(&inst));
        }
        assert_eq!(packing.bin_count(), 3);
    }

    proptest! {
        #[test]
        fn moves_keep_packings_valid_and_never_add_bins(
            capacity in 10u64..200,
            raw in prop::collection::vec(1u64..10_000, 1..60),
            seed in any::<u64>(),
        ) {
            let sizes: Vec<u64> = raw.iter().map(|r| 1 + r % capacity).collect();
            let inst = instance(capacity, sizes);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut packing = Packing::noisy_first_fit_decreasing(&inst, &mut rng);
            prop_assert!(packing.is_valid(&inst));
            let lower_bound = inst.lower_bound_l2() as usize;
            for _ in 0..20 {
                let before = packing.bin_count();
                packing.eliminate_bins(&inst, &mut rng);
                prop_assert!(packing.is_valid(&inst));
                prop_assert!(packing.bin_count() <= before);
                prop_assert!(packing.bin_count() >= lower_bound);
            }
        }

        #[test]
        fn search_reaches_the_optimum_of_small_instances(
            capacity in 5u64..30,
            raw in prop::collection::vec(1u64..1000, 1..8),
            seed in any::<u64>(),
        ) {
            let sizes: Vec<u64> = raw.iter().map(|r| 1 + r % capacity).collect();
            let inst = instance(capacity, sizes);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut packing = Packing::noisy_first_fit_decreasing(&inst, &mut rng);
            for _ in 0..200 {
                packing.eliminate_bins(&inst, &mut rng);
            }
            prop_assert_eq!(packing.bin_count() as u64, optimum_by_exhaustive_search(&inst));
        }
    }
}
