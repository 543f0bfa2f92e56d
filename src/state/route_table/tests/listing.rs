//! Listings stay on the quick path up to the documented sizes (topics, broker groups).

use crate::state::route_table::testing::{body, reg, register};
use crate::state::route_table::*;

#[test]
fn listings_are_quick_up_to_2048_topics_and_64_groups() {
    let now = Instant::now();
    let mut t = RouteTable::default();
    assert!(t.lists_quickly());
    let names: Vec<String> = (0..2_049).map(|i| format!("T{i}")).collect();
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    let last = names.pop().unwrap();
    register(
        &mut t,
        &reg("b", "10.0.0.1:10911", 0, 1),
        &body(1, &names),
        now,
    );
    assert!(t.lists_quickly(), "2 048 topics");
    names.push(last);
    register(
        &mut t,
        &reg("b", "10.0.0.1:10911", 0, 1),
        &body(2, &names),
        now,
    );
    assert!(!t.lists_quickly(), "2 049 topics");

    let mut t = RouteTable::default();
    for g in 0..65u64 {
        let (name, addr) = (format!("g{g}"), format!("10.0.1.{g}:10911"));
        register(&mut t, &reg(&name, &addr, 0, g), &body(1, &["T"]), now);
        assert_eq!(t.lists_quickly(), g < 64, "{} groups", g + 1);
    }
}
