//! Data-flow analyses over the call graph (activity, TBR, linearity). Each returns side tables
//! keyed by IR ids; none adds fields to the IR.

pub mod activity;
pub mod dataflow;
pub mod effects;
pub mod linearity;
pub mod report;
pub mod tbr;
