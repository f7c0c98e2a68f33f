//! The XAIF executor and the derivative verifier.
