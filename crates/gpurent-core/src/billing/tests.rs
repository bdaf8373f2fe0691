//! Table tests against the providers' published examples and the guides' round-up example.

use super::*;
use InstanceState::*;

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const T0: i64 = 1_764_000_000_000;

fn tl(rows: &[(i64, InstanceState)]) -> Vec<StateChange> {
    rows.iter()
        .map(|&(at, state)| StateChange {
            at_ms: T0 + at,
            state,
        })
        .collect()
}

fn input(meter: &str, rate: Option<f64>, quantity: f64) -> RateInput {
    RateInput {
        meter: meter.into(),
        rate,
        quantity,
    }
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn line(c: &CostBreakdown, meter: &str) -> f64 {
    c.lines
        .iter()
        .find(|l| l.meter == meter)
        .map(|l| l.usd)
        .unwrap_or_else(|| panic!("no line {meter} in {c:?}"))
}

#[test]
fn the_bundled_rules_load_and_cite_sources() {
    let all = rules::all().expect("rules");
    for p in ["runpod", "vast", "lambda"] {
        let rs = rules::for_provider(p).expect("provider");
        assert!(rs.iter().any(|r| r.meter == "compute"), "{p} has compute");
    }
    for r in all {
        assert!(r.source.starts_with("https://"), "{r:?}");
        assert!(!r.note.is_empty(), "{r:?}");
        if matches!(
            r.rate_unit,
            RateUnit::UsdPerGbMonth | RateUnit::UsdPerGibMonth
        ) {
            assert!(
                r.hours_per_month.is_some(),
                "monthly rate needs hours: {r:?}"
            );
        }
    }
    // What the issue states, as data: a stopped RunPod pod still pays its volume; Vast storage
    // runs while the instance exists; Lambda bills compute per minute.
    let find = |p: &str, m: &str| {
        all.iter()
            .find(|r| r.provider == p && r.meter == m)
            .unwrap_or_else(|| panic!("{p} {m}"))
    };
    assert_eq!(find("runpod", "volume_stopped").bills_in, BillsIn::Stopped);
    assert_eq!(find("runpod", "container_disk").bills_in, BillsIn::Running);
    assert_eq!(find("vast", "storage").bills_in, BillsIn::Exists);
    assert_eq!(find("vast", "compute").increment, Increment::Second);
    assert_eq!(find("lambda", "compute").increment, Increment::Minute);
    assert_eq!(
        find("lambda", "filesystem").rate_unit,
        RateUnit::UsdPerGibMonth
    );
}

/// The guides: "用了 1 小时 10 分钟，可能按 2 小时计费" — and the same span under the other rules.
#[test]
fn pasted_host_rules_round_each_span_up() {
    let cases = [
        // (rule, span, billed hours)
        (Increment::Hour, 70 * MIN, 2.0),
        (Increment::Hour, 60 * MIN, 1.0),
        (Increment::Hour, MIN, 1.0),
        (Increment::Minute, 70 * MIN, 70.0 / 60.0),
        (Increment::Minute, 70 * MIN + 1, 71.0 / 60.0),
        (
            Increment::Second,
            70 * MIN + 1,
            (70.0 * 60.0 + 1.0) / 3600.0,
        ),
        (Increment::Second, 0, 0.0),
    ];
    for (rule, span, hours) in cases {
        let rate = PastedRate {
            usd_per_hour: 1.50,
            rule,
            storage_usd_per_day: None,
            currency: Currency::Usd,
            platform: None,
        };
        let t = tl(&[(0, Running), (span, Terminated)]);
        let c = cost_so_far(&t, &rate.tariff(), Traffic::default(), T0 + 10 * HOUR);
        assert!(
            close(c.total_usd, 1.50 * hours),
            "{rule:?} {span} ms: {} vs {}",
            c.total_usd,
            1.50 * hours
        );
    }
}

/// Stop/start cycles: each running span is rounded on its own; storage runs through the stops.
#[test]
fn stop_start_cycles() {
    let t = tl(&[
        (0, Provisioning),
        (5 * MIN, Running),
        (35 * MIN, Stopped),
        (95 * MIN, Running),
        (135 * MIN, Stopped),
        (140 * MIN, Terminated),
    ]);
    let now = T0 + 10 * HOUR;
    let hourly = PastedRate {
        usd_per_hour: 2.0,
        rule: Increment::Hour,
        storage_usd_per_day: Some(2.4),
        currency: Currency::Usd,
        platform: None,
    };
    let c = cost_so_far(&t, &hourly.tariff(), Traffic::default(), now);
    // 30 min + 40 min running: two started hours, not 70 minutes.
    assert!(close(line(&c, "compute"), 4.0), "{c:?}");
    // Storage from provisioning to termination: 140 min at 0.1 $/h.
    assert!(close(line(&c, "storage"), 0.1 * 140.0 / 60.0), "{c:?}");
    let per_second = PastedRate {
        rule: Increment::Second,
        ..hourly
    };
    let c = cost_so_far(&t, &per_second.tariff(), Traffic::default(), now);
    assert!(close(line(&c, "compute"), 2.0 * 70.0 / 60.0), "{c:?}");
    // Terminated: nothing per hour, and the projection does not grow.
    assert_eq!(usd_per_hour_now(&t, &per_second.tariff(), now), 0.0);
    let later = cost_until(
        &t,
        &per_second.tariff(),
        Traffic::default(),
        now,
        now + 24 * HOUR,
    );
    assert!(close(later.total_usd, c.total_usd));
}

/// Cost so far, per hour now, and the projection when the current state continues.
#[test]
fn so_far_now_and_projected() {
    let rate = PastedRate {
        usd_per_hour: 3.0,
        rule: Increment::Second,
        storage_usd_per_day: None,
        currency: Currency::Usd,
        platform: None,
    };
    let t = tl(&[(0, Running)]);
    let tariff = rate.tariff();
    let now = T0 + HOUR;
    assert!(close(
        cost_so_far(&t, &tariff, Traffic::default(), now).total_usd,
        3.0
    ));
    assert!(close(usd_per_hour_now(&t, &tariff, now), 3.0));
    let by = cost_until(&t, &tariff, Traffic::default(), now, T0 + 3 * HOUR);
    assert!(close(by.total_usd, 9.0));
    // A time before now is "so far", not less.
    let back = cost_until(&t, &tariff, Traffic::default(), now, T0);
    assert!(close(back.total_usd, 3.0));
    // Before the first change nothing is billed; changes after `now` are not known yet.
    assert_eq!(usd_per_hour_now(&t, &tariff, T0 - 1), 0.0);
    let t2 = tl(&[(0, Running), (2 * HOUR, Stopped)]);
    assert!(close(
        cost_so_far(&t2, &tariff, Traffic::default(), now).total_usd,
        3.0
    ));
}

/// Lambda's published filesystem example (docs.lambda.ai/public-cloud/billing): 1,000 GiB at
/// $0.20 per GiB-month for a full month (720 h) is $200.00, for a day (24 h) $6.67.
#[test]
fn lambda_filesystem_example() {
    let tariff =
        Tariff::from_rules("lambda", &[input("filesystem", Some(0.20), 1000.0)]).expect("tariff");
    for (hours, usd) in [(720, 200.00), (24, 6.67)] {
        let t = tl(&[(0, Running), (hours * HOUR, Terminated)]);
        let c = cost_so_far(&t, &tariff, Traffic::default(), T0 + 1000 * HOUR);
        assert_eq!(cents(c.total_usd), usd, "{hours} h");
    }
    // One-hour increments: 24 h 1 min is billed as 25 h.
    let t = tl(&[(0, Running), (24 * HOUR + MIN, Terminated)]);
    let c = cost_so_far(&t, &tariff, Traffic::default(), T0 + 1000 * HOUR);
    assert_eq!(cents(c.total_usd), cents(200.0 * 25.0 / 720.0));
}

/// Lambda compute in one-minute increments at the spec's example price (gpu_1x_gh200,
/// price_cents_per_hour 149), from running to terminate.
#[test]
fn lambda_compute_per_minute() {
    let tariff =
        Tariff::from_rules("lambda", &[input("compute", Some(149.0 / 100.0), 1.0)]).expect("t");
    let t = tl(&[
        (0, Provisioning),
        (2 * MIN, Running),
        (2 * MIN + 61_000, Terminated),
    ]);
    let c = cost_so_far(&t, &tariff, Traffic::default(), T0 + HOUR);
    assert!(close(c.total_usd, 1.49 * 2.0 / 60.0), "{c:?}");
    assert_eq!(c.lines[0].billed_ms, 2 * MIN);
}

/// RunPod: compute and container disk while running, the volume at its running rate and, once
/// stopped, at the stopped rate (published $0.10 / $0.20 per GB-month). The spec's pod example
/// costs 0.44 USD/h.
#[test]
fn runpod_stopped_pod_still_pays_its_volume() {
    let tariff = Tariff::from_rules(
        "runpod",
        &[
            input("compute", Some(0.44), 1.0),
            input("container_disk", None, 50.0),
            input("volume", None, 20.0),
            input("volume_stopped", None, 20.0),
        ],
    )
    .expect("tariff");
    let t = tl(&[(0, Running), (2 * HOUR, Stopped)]);
    let now = T0 + 12 * HOUR;
    let c = cost_so_far(&t, &tariff, Traffic::default(), now);
    assert!(close(line(&c, "compute"), 0.88));
    assert!(close(line(&c, "container_disk"), 50.0 * 0.10 * 2.0 / 720.0));
    assert!(close(line(&c, "volume"), 20.0 * 0.10 * 2.0 / 720.0));
    assert!(close(
        line(&c, "volume_stopped"),
        20.0 * 0.20 * 10.0 / 720.0
    ));
    let stopped_rate = usd_per_hour_now(&t, &tariff, now);
    assert!(close(stopped_rate, 20.0 * 0.20 / 720.0), "{stopped_rate}");
    assert!(stopped_rate > 0.0, "a stopped pod is not free");
}

/// Vast: compute per second while running, storage per second while it exists (stopped
/// included), bandwidth per byte at the offer's $/GB.
#[test]
fn vast_storage_while_stopped_and_bandwidth() {
    let tariff = Tariff::from_rules(
        "vast",
        &[
            input("compute", Some(0.8), 1.0),
            input("storage", Some(0.15), 100.0),
            input("bandwidth_out", Some(0.02), 1.0),
            input("bandwidth_in", Some(0.01), 1.0),
        ],
    )
    .expect("tariff");
    let t = tl(&[(0, Provisioning), (MIN, Running), (MIN + 1_500, Stopped)]);
    let now = T0 + MIN + 1_500 + HOUR;
    let traffic = Traffic {
        bytes_in: 1_000_000_000,
        bytes_out: 2_500_000_001,
    };
    let c = cost_so_far(&t, &tariff, traffic, now);
    // 1.5 s running rounds up to 2 s.
    assert!(close(line(&c, "compute"), 0.8 * 2.0 / 3600.0), "{c:?}");
    // Storage from creation, stopped included: 1 h 1 min 1.5 s, rounded up to the second.
    let storage_hours = 3662.0 / 3600.0;
    assert!(close(
        line(&c, "storage"),
        0.15 * 100.0 / 720.0 * storage_hours
    ));
    assert!(close(line(&c, "bandwidth_out"), 0.02 * 2.500_000_001));
    assert!(close(line(&c, "bandwidth_in"), 0.01));
    assert!(close(
        usd_per_hour_now(&t, &tariff, now),
        0.15 * 100.0 / 720.0
    ));
}

#[test]
fn bad_inputs_are_refused() {
    assert!(Tariff::from_rules("nowhere", &[]).is_err());
    assert!(Tariff::from_rules("lambda", &[input("volume", Some(1.0), 1.0)]).is_err());
    // Vast publishes no compute rate: one must be given.
    assert!(Tariff::from_rules("vast", &[input("compute", None, 1.0)]).is_err());
    assert!(Tariff::from_rules("vast", &[input("compute", Some(f64::NAN), 1.0)]).is_err());
    let bad = PastedRate {
        usd_per_hour: -1.0,
        rule: Increment::Hour,
        storage_usd_per_day: None,
        currency: Currency::Usd,
        platform: None,
    };
    assert!(bad.validate().is_err());
    assert_eq!(
        Increment::from_rule_name("per-hour-rounded-up"),
        Some(Increment::Hour)
    );
    assert_eq!(InstanceState::from_ledger("running"), Some(Running));
    assert_eq!(InstanceState::from_ledger("weird"), None);
    assert_eq!(InstanceState::from_ledger("unknown"), None);
    // Every state the providers' ledger writes that bills or not, by its own text.
    use crate::providers::ledger::LedgerState as L;
    for (l, want) in [
        (L::Intent, Some(Intent)),
        (L::Provisioning, Some(Provisioning)),
        (L::Running, Some(Running)),
        (L::Stopped, Some(Stopped)),
        (L::Terminated, Some(Terminated)),
        (L::CreateFailed, Some(Terminated)),
        (L::Unknown, None),
    ] {
        assert_eq!(InstanceState::from_ledger(l.as_str()), want, "{l:?}");
    }
}
