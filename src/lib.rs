//! xaifbooster: a transformation engine for XAIF, the XML interchange format of the OpenAD
//! automatic differentiation toolchain. See `ARCHITECTURE.md` for the map.

pub mod ir;
pub mod xaif;
