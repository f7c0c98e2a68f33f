//! Transformations of the call graph, one module per algorithm.
pub mod linearize;
pub mod tangent;
