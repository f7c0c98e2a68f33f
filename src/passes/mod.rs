//! Transformations of the call graph, one module per algorithm.
