//! Transformations of the call graph, one module per algorithm.
pub mod adjoint;
pub mod elimination;
pub mod init_derivatives;
pub mod linearize;
pub mod passivate;
pub mod tangent;
pub mod trace;
pub mod type_change;
