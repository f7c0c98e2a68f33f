//! Forced passivation (`-p NAMES`): the user declares variables passive that activity analysis
//! (the front end's) found active, e.g. to cut derivatives of a quantity known not to matter.
//! Runs first, so TypeChange then converts at every call where a passivated variable meets an
//! active formal or the reverse.

use crate::ir::*;

/// How names on the command line match XAIF symbol names.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Decorations {
    /// Open64's front end appends `_N` to every name (`X_23` for `x`): ignored when matching.
    #[default]
    Open64,
    /// Names match as they are (without case).
    None,
}

/// Which symbols were made passive, and which names matched nothing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Passivation {
    /// XAIF names of the symbols made passive, in symbol-table order.
    pub passivated: Vec<String>,
    /// Names given that match no active or passive variable.
    pub unmatched: Vec<String>,
}

/// Makes every variable whose name is among `names` passive: the symbol, and every reference
/// to it. A name matches a symbol in every scope that declares it (a routine's own `x` as much
/// as a module's `x`).
pub fn force_passive(cg: &mut CallGraph, names: &[String], decorations: Decorations) -> Passivation {
    let mut result = Passivation::default();
    if names.is_empty() {
        return result;
    }
    let wanted: Vec<String> = names.iter().map(|n| n.to_ascii_uppercase()).collect();
    let mut matched = vec![false; wanted.len()];
    let mut passive = vec![false; cg.symbols.len()];
    for (id, symbol) in cg.symbols.iter_mut() {
        if symbol.temp || symbol.kind == SymbolKind::Subroutine {
            continue;
        }
        let name = cg.names.get(symbol.name);
        let plain = match decorations {
            Decorations::Open64 => strip_decoration(name),
            Decorations::None => name,
        }
        .to_ascii_uppercase();
        let Some(k) = wanted.iter().position(|w| *w == plain) else { continue };
        matched[k] = true;
        if symbol.active {
            symbol.active = false;
            passive[id.into_raw().into_u32() as usize] = true;
            result.passivated.push(name.to_owned());
        }
    }
    result.unmatched = names.iter().zip(&matched).filter(|(_, m)| !**m).map(|(n, _)| n.clone()).collect();
    if result.passivated.is_empty() {
        return result;
    }
    cg.for_each_reference_mut(&mut |reference| {
        if let Some(base) = reference.base_symbol()
            && passive[base.into_raw().into_u32() as usize]
        {
            reference.active = ActiveUse::False;
            reference.deriv = false;
        }
    });
    result
}

/// Makes the given symbols passive (the symbols and every reference to them); returns the
/// names of those that were active. For what an analysis proves passive.
pub fn passivate_symbols(cg: &mut CallGraph, symbols: &[SymbolId]) -> Vec<String> {
    let mut passive = vec![false; cg.symbols.len()];
    let mut names = Vec::new();
    for &id in symbols {
        let symbol = &mut cg.symbols[id];
        if symbol.active {
            symbol.active = false;
            passive[id.into_raw().into_u32() as usize] = true;
            names.push(cg.names.get(symbol.name).to_owned());
        }
    }
    if names.is_empty() {
        return names;
    }
    cg.for_each_reference_mut(&mut |reference| {
        if let Some(base) = reference.base_symbol()
            && passive[base.into_raw().into_u32() as usize]
        {
            reference.active = ActiveUse::False;
            reference.deriv = false;
        }
    });
    names
}

/// `X_23` → `X`, `foo__3` → `foo`; a name without the decoration stays as it is.
fn strip_decoration(name: &str) -> &str {
    let without_digits = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if without_digits.len() == name.len() || !without_digits.ends_with('_') {
        return name;
    }
    let stripped = without_digits.trim_end_matches('_');
    if stripped.is_empty() { name } else { stripped }
}

#[cfg(test)]
mod tests {
    use super::strip_decoration;

    #[test]
    fn decorations() {
        assert_eq!(strip_decoration("X_23"), "X");
        assert_eq!(strip_decoration("foo__3"), "foo");
        assert_eq!(strip_decoration("A_B_7"), "A_B");
        assert_eq!(strip_decoration("plain"), "plain");
        assert_eq!(strip_decoration("X2"), "X2");
        assert_eq!(strip_decoration("_1"), "_1");
    }
}
