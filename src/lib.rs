//! xaifbooster: a transformation engine for XAIF, the XML interchange format of the OpenAD
//! automatic differentiation toolchain. See `ARCHITECTURE.md` for the map.

pub mod analysis;
pub mod cli;
pub mod interp;
pub mod ir;
pub mod passes;
pub mod pipeline;
pub mod xaif;
