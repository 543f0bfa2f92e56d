//! Route-table tests that span its submodules: the expiry scan under eviction protection,
//! the quick-listing limits, routes and listings, and the property test of the whole table
//! against a model.
//! Tests of one submodule's rules sit in that submodule.

mod expiry;
mod listing;
mod model;
mod query;
