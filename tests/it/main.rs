//! The integration tests, one binary: each file was its own test crate, and linking twenty
//! crates against the optimized library cost minutes of build time. `tests/no_alloc.rs` stays
//! apart because it installs a counting global allocator.

mod accountant_properties;
mod accounting_notes;
mod audit;
mod audit_one_run;
mod bad_input;
mod cli;
mod cliplaw;
mod clipnorm;
mod clipnorm_methods;
mod clipnorm_recommend;
mod clipnorm_results;
mod cluster;
mod common;
mod config_doc;
mod config_fuzz;
mod data;
mod dpsgd;
mod experiment;
mod flags;
mod heavy_families;
mod help;
mod ledger;
mod lemmas;
mod limits;
mod losses;
mod lower_bound;
mod mechanism_noise;
mod privacy;
mod readme;
mod recommend_budget;
mod recommend_small;
mod release_noise;
mod results_file;
mod risk_split;
mod schedule;
mod simulations;
mod step_clip;
mod theory;
mod usage;
mod worstcase;
mod worstcase_families;
mod worstcase_qv;
mod worstcase_search;
