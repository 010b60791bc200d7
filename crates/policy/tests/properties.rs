//! Invariants under arbitrary inputs: strategies stay probability vectors
//! and every decision is a place the thread may take, whatever the speeds
//! (NaN, infinities, negative, zero, huge) and however threads come and go.

use pinlearn_policy::{
    Arm, GuardConfig, Layout, LearnConfig, LearnPolicy, Objective, PeriodInput, Pla, PlaConfig, PlaceKind, Policy,
    ThreadSample,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn weird_speed() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
        Just(1e12),
        Just(1e-300),
        Just(f64::MAX),
        -10.0..0.0f64,
        0.0..2.0f64,
    ]
}

fn assert_probability_vector(v: &[f64], what: &str) {
    assert!(
        v.iter().all(|&p| p >= 0.0 && p.is_finite()),
        "{what} has a bad entry: {v:?}"
    );
    let total: f64 = v.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "{what} sums to {total}: {v:?}");
}

fn pla_config() -> impl Strategy<Value = PlaConfig> {
    (0.001..=1.0f64, 0.0..1.0f64, 0.001..=1.0f64, 0.01..=1.5f64, 0.0..=1.0f64).prop_map(
        |(step, lambda, nu, threshold, init_focus)| PlaConfig {
            step,
            lambda,
            nu,
            threshold,
            init_focus,
        },
    )
}

proptest! {
    #[test]
    fn automaton_strategies_stay_in_the_simplex(
        actions in 1usize..20,
        first_seed in any::<usize>(),
        cfg in pla_config(),
        utilities in prop::collection::vec(weird_speed(), 1..200),
        seed in any::<u64>(),
    ) {
        let places: Vec<usize> = (0..actions).map(|a| 100 + 3 * a).collect();
        let mut pla = Pla::new(places.clone(), first_seed % actions, cfg);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for u in utilities {
            let place = pla.choose(&mut rng);
            prop_assert!(places.contains(&place));
            prop_assert_eq!(pla.current(), place);
            pla.learn(u);
            assert_probability_vector(pla.x(), "x");
            assert_probability_vector(&pla.strategy(), "sigma");
            if let Some(ubar) = pla.ubar() {
                prop_assert!(ubar.is_finite());
            }
        }
    }

    #[test]
    fn learn_policy_decisions_are_valid_places(
        cores in prop::collection::vec(1usize..4, 1..4),
        objective in prop_oneof![Just(Objective::Mean), Just(Objective::Own), (0.0..10.0f64).prop_map(|gamma| Objective::Balanced { gamma })],
        reset_on_exit in any::<bool>(),
        guarded in any::<bool>(),
        periods in prop::collection::vec(
            (prop::collection::btree_map(0u64..12, prop::option::of(weird_speed()), 0..10), any::<bool>()),
            1..60,
        ),
        seed in any::<u64>(),
    ) {
        let layout = Layout::new(&cores.iter().map(|&n| vec![1; n]).collect::<Vec<_>>());
        let guard = GuardConfig { enabled: guarded, window: 2, ..GuardConfig::default() };
        let cfg = LearnConfig { objective, reset_on_exit, guard, ..LearnConfig::default() };
        let mut policy = LearnPolicy::new(layout.clone(), cfg, seed);
        for (period, (live, numa_tick)) in periods.into_iter().enumerate() {
            let threads: Vec<ThreadSample> = live.into_iter().map(|(key, speed)| ThreadSample::of(key, speed)).collect();
            let input = PeriodInput { numa_tick, ..PeriodInput::of(period as u64, period as f64, &threads) };
            let decision = policy.decide(&input);
            prop_assert_eq!(decision.place.len(), threads.len());
            prop_assert_eq!(decision.utility.len(), threads.len());
            prop_assert_eq!(policy.keys().collect::<Vec<_>>(), threads.iter().map(|t| t.key).collect::<Vec<_>>());
            if policy.guard().arm() == Arm::Os {
                // The OS's window: everyone on the whole machine.
                prop_assert!(guarded);
                prop_assert!(decision.place.iter().all(|&place| place == layout.whole()));
                continue;
            }
            for (sample, &place) in threads.iter().zip(&decision.place) {
                let pla = policy.pla(sample.key).expect("every live thread has an automaton");
                let node = policy.numa_state(sample.key).unwrap().node;
                prop_assert!(pla.actions().contains(&place));
                prop_assert_eq!(pla.current(), place);
                let spec = layout.places()[place];
                prop_assert!(spec.kind != PlaceKind::Machine);
                prop_assert_eq!(spec.node, Some(node));
                assert_probability_vector(pla.x(), "x");
                assert_probability_vector(&pla.strategy(), "sigma");
            }
        }
    }
}
