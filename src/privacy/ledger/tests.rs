use std::io::Write;

use super::*;

/// A fresh folder of this test's own (no two tests share a path).
fn folder(name: &str) -> PathBuf {
    crate::test_dir::tmpdir(&format!("ledger-{name}"))
}

fn rows(v: f64) -> DataId {
    let data = Dataset::new(vec![v, 1.0, 2.0], vec![0.0, 1.0, 0.0], 1).unwrap();
    DataId::of("d.csv", &data)
}

fn spend(e: f64, d: f64) -> Spend {
    Spend::new("test", "m", e, d)
}

#[test]
fn spends_add_up_and_an_overspend_is_refused_and_not_recorded() {
    let dir = folder("add");
    let p = dir.join("l.jsonl");
    let data = rows(0.0);
    let mut l = Ledger::open_for(&p, &data, Some((2.0, 1e-5))).unwrap();
    assert!(l.notes()[0].contains("made"), "{:?}", l.notes());
    l.invoke(&data, spend(1.5, 5e-6), || Ok(())).unwrap();
    let mut ran = false;
    assert!(
        l.invoke(&data, spend(0.6, 0.0), || {
            ran = true;
            Ok(())
        })
        .is_err()
    );
    assert!(!ran, "a refused spend ran its mechanism");
    l.invoke(&data, spend(0.5, 5e-6), || Ok(())).unwrap();
    let again = Ledger::open_for(&p, &data, Some((2.0, 1e-5))).unwrap();
    assert!(
        again.notes().is_empty(),
        "an existing ledger was announced as new"
    );
    assert_eq!(again.spends().len(), 2);
    assert_eq!(again.remaining(), (0.0, 0.0));
    assert!(again.check(&[spend(1e-3, 0.0)], "x").is_err());
}

/// A spend that fits in epsilon but not in delta is refused (every other test overspends
/// epsilon; a ledger that checked epsilon alone would pass them).
#[test]
fn a_delta_overspend_alone_is_refused() {
    let dir = folder("delta");
    let p = dir.join("l.jsonl");
    let data = rows(0.0);
    let mut l = Ledger::open_for(&p, &data, Some((2.0, 1e-5))).unwrap();
    l.invoke(&data, spend(0.1, 8e-6), || Ok(())).unwrap();
    let err = l.invoke(&data, spend(0.1, 3e-6), || Ok(())).unwrap_err();
    assert!(err.to_string().contains("left of its budget"), "{err}");
    assert_eq!(Ledger::open(&p).unwrap().spends().len(), 1);
}

/// A ledger edited by hand to hide a spend (negative), or broken (NaN: not JSON), or over its
/// budget, is refused as a whole.
#[test]
fn negative_nan_and_over_budget_lines_are_refused() {
    let dir = folder("bad");
    for (name, line) in [
        (
            "neg",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":-5,"delta":0}"#,
        ),
        (
            "nan",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":NaN,"delta":0}"#,
        ),
        (
            "negd",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":0.1,"delta":-1}"#,
        ),
        (
            "over",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":2.5,"delta":0}"#,
        ),
        (
            "overd",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":0.5,"delta":2e-5}"#,
        ),
        (
            "badcurve",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":0.1,"delta":0,"guarantee":{"type":"zcdp","rho":-1}}"#,
        ),
    ] {
        let p = dir.join(format!("{name}.jsonl"));
        Ledger::open_for(&p, &rows(0.0), Some((2.0, 1e-5))).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(f, "{line}").unwrap();
        assert!(Ledger::open(&p).is_err(), "{name} accepted");
    }
}

/// Another data set's ledger, an edited data file and a ledger without a fingerprint are refused.
#[test]
fn a_ledger_refuses_rows_that_are_not_its_own() {
    let dir = folder("bind");
    let p = dir.join("l.jsonl");
    let mut l = Ledger::open_for(&p, &rows(0.0), Some((2.0, 1e-5))).unwrap();
    let other = rows(0.5);
    let err = Ledger::open_for(&p, &other, Some((2.0, 1e-5))).unwrap_err();
    assert!(err.to_string().contains("guards other rows"), "{err}");
    assert!(l.invoke(&other, spend(0.1, 0.0), || Ok(())).is_err());
    // A copy of the same rows under another name is the same data.
    let mut same = rows(0.0);
    same.name = "copy.csv".into();
    assert!(Ledger::open_for(&p, &same, None).is_ok());
    let legacy = dir.join("legacy.jsonl");
    std::fs::write(
        &legacy,
        "{\"kind\":\"budget\",\"epsilon\":2,\"delta\":1e-5,\"data\":\"d.csv\",\"unix_time\":0}\n",
    )
    .unwrap();
    let err = Ledger::open_for(&legacy, &rows(0.0), None).unwrap_err();
    assert!(err.to_string().contains("no fingerprint"), "{err}");
}

/// Threads that each read the ledger first and then spend at once never overspend: the check
/// is made again under the lock (a check against the first reading would let all of them in).
#[test]
fn concurrent_spenders_never_overspend() {
    let dir = folder("race");
    let p = dir.join("l.jsonl");
    let data = rows(0.0);
    Ledger::open_for(&p, &data, Some((1.0, 1e-5))).unwrap();
    let barrier = std::sync::Barrier::new(8);
    let ok: usize = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let mut l = Ledger::open_for(&p, &data, None).unwrap();
                    barrier.wait();
                    l.invoke(&data, spend(0.3, 0.0), || Ok(())).is_ok() as usize
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(ok, 3, "0.3 fits 3 times in 1.0");
    let l = Ledger::open(&p).unwrap();
    assert_eq!(l.spends().len(), 3);
    assert!(l.spent().0 <= 1.0);
}

/// A last line without its newline: whole, it is counted and its newline added; cut short, it
/// is removed (its mechanism never ran). Either way the next spend appends a readable line.
#[test]
fn a_torn_last_line_is_repaired_by_the_stated_rule() {
    let dir = folder("torn");
    let data = rows(0.0);
    for (name, tail, spends) in [
        (
            "whole",
            r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":0.5,"delta":0}"#,
            2,
        ),
        ("cut", r#"{"kind":"spend","command":"x","mechan"#, 1),
    ] {
        let p = dir.join(format!("{name}.jsonl"));
        Ledger::open_for(&p, &data, Some((2.0, 1e-5))).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        write!(f, "{tail}").unwrap();
        drop(f);
        let mut l = Ledger::open_for(&p, &data, None).unwrap();
        assert_eq!(l.notes().len(), 1, "{name}: {:?}", l.notes());
        l.invoke(&data, spend(0.1, 0.0), || Ok(())).unwrap();
        let again = Ledger::open(&p).unwrap();
        assert_eq!(again.spends().len(), spends, "{name}");
        assert!(again.notes().is_empty());
        assert!(std::fs::read_to_string(&p).unwrap().ends_with('\n'));
    }
}

/// A FIFO or a device is refused before it is opened (opening a FIFO would block).
#[cfg(unix)]
#[test]
fn a_ledger_that_is_not_a_regular_file_is_refused() {
    let dir = folder("fifo");
    let fifo = dir.join("fifo");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        let err = Ledger::open(&fifo).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
    let err = Ledger::open(Path::new("/dev/full")).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// Spends with curves compose in RDP: RNMM's exponential mechanism at 0.3 and DP-SGD fit in a
/// budget of 1 where the basic sum of their stated epsilons does not.
#[test]
fn curves_compose_tighter_than_their_sum() {
    let dir = folder("rdp");
    let p = dir.join("l.jsonl");
    let data = rows(0.0);
    let mut l = Ledger::open_for(&p, &data, Some((1.0, 1e-5))).unwrap();
    l.invoke(
        &data,
        Spend::with_curve(
            "t",
            "RNMM",
            (0.3, 0.0),
            Guarantee::ExponentialMechanism { epsilon: 0.3 },
        ),
        || Ok(()),
    )
    .unwrap();
    let (q, steps, delta) = (0.01, 1000, 1e-5);
    // z with a stated epsilon of 0.75 alone: more than the 0.7 basic composition leaves.
    let z =
        crate::privacy::calibrate_noise(crate::privacy::AccountantKind::Rdp, q, steps, 0.75, delta)
            .unwrap();
    let s = Spend::with_curve(
        "t",
        "DP-SGD",
        (0.75, delta),
        Guarantee::SubsampledGaussian { q, z, steps },
    );
    assert!(
        l.compose_with(std::slice::from_ref(&s))
            .unwrap()
            .basic_epsilon
            > 1.0
    );
    l.invoke(&data, s, || Ok(())).unwrap();
    assert!(l.spent().0 <= 1.0);
}
