//! The decisions against the spec's checks, codes, remarks and bodies, Java's bugs of
//! CONTROLLER.md §9 that apply (each test fails on the buggy behaviour), and properties over
//! random request sequences.

mod alter;
mod elect;
mod ids;
mod props;
mod reads;
