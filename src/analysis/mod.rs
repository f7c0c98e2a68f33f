//! Data-flow analyses over the call graph (activity, TBR, linearity).
