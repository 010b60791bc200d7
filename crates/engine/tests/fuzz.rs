//! Fuzzing the engine's parsers with proptest: durations and configuration
//! files. Whatever the input: no panic, and every rejection is one line
//! that says what was wrong.
//!
//! Cases per property: `PINLEARN_FUZZ_CASES` (default 2000, what CI runs);
//! the documented long run (docs/reliability.md) sets it to 1000000.

use pinlearn_engine::{Settings, format_duration, parse_duration};
use proptest::prelude::*;
use std::time::Duration;

fn cases() -> u32 {
    std::env::var("PINLEARN_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

fn near_durations() -> impl Strategy<Value = String> {
    prop_oneof![
        "([0-9]{0,20}(\\.[0-9]{0,6})? ?(ns|us|µs|ms|s|m|min|h|d|x)? ?){0,3}",
        "[0-9.eE+\\-a-z µ]{0,16}",
        any::<String>(),
    ]
}

/// TOML-like text with pinlearn's keys and values of every kind.
fn near_configs() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("interval"),
        Just("metric"),
        Just("policy"),
        Just("seed"),
        Just("children"),
        Just("memory_binding"),
        Just("move_thread_memory"),
        Just("follow_program_affinity"),
        Just("start"),
        Just("init_focus"),
        Just("enabled"),
        Just("nosuch"),
    ];
    let value = prop_oneof![
        Just("\"50ms\"".to_string()),
        Just("\"learn\"".to_string()),
        Just("\"cpu\"".to_string()),
        Just("true".to_string()),
        "-?[0-9]{1,22}(\\.[0-9]{1,4})?",
        "\"[a-z0-9 :.]{0,12}\"",
        Just("[1, 2]".to_string()),
    ];
    let table = prop_oneof![
        Just(""),
        Just("[learn]\n"),
        Just("[learn.pla]\n"),
        Just("[learn.guard]\n"),
        Just("[[levels]]\n"),
        Just("[nosuch]\n")
    ];
    prop_oneof![
        proptest::collection::vec((table, key, value), 0..8).prop_map(|lines| {
            lines
                .into_iter()
                .map(|(table, key, value)| format!("{table}{key} = {value}\n"))
                .collect::<String>()
        }),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn durations_parse_or_say_why(text in near_durations()) {
        match parse_duration(&text) {
            Ok(duration) => {
                // What was read prints back to text that reads within a nanosecond.
                let again = parse_duration(&format_duration(duration)).expect("formatted durations parse");
                let difference = again.abs_diff(duration);
                prop_assert!(difference <= Duration::from_nanos(1), "{:?} vs {:?}", again, duration);
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("invalid duration") && !message.contains('\n'), "{:?}", message);
            }
        }
    }

    #[test]
    fn every_duration_formats_to_text_that_parses_back(nanos in any::<u64>()) {
        let duration = Duration::from_nanos(nanos);
        prop_assert_eq!(parse_duration(&format_duration(duration)).ok(), Some(duration));
    }

    #[test]
    fn configurations_parse_or_say_why(text in near_configs()) {
        match Settings::from_toml_str(&text) {
            Ok(settings) => {
                // Accepted settings print to TOML that reads back the same.
                let again = Settings::from_toml_str(&settings.to_toml()).expect("printed settings parse");
                prop_assert_eq!(again.to_toml(), settings.to_toml());
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(!message.is_empty() && !message.contains('\n'), "{:?}", message);
            }
        }
    }
}
