//! Transformations of the call graph, one module per algorithm.
pub mod elimination;
pub mod linearize;
pub mod tangent;
