//! The head of a document, before any routine: the scope hierarchy with its symbols, and the
//! alias, du-ud and DO maps whose keys references name.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Elem, Lower, PendingEdge, Result};
use crate::ir::*;
use crate::xaif::check;

impl<'a> Lower<'a> {
    pub(super) fn scope_hierarchy(&mut self, elem: Elem<'a>) -> Result<()> {
        let [] = self.attrs(&elem, [])?;
        let mut pending_edges = Vec::new();
        // Scopes first (their symbols may be read only once the scope exists); edges later.
        while let Some(child) = self.children(&elem)? {
            match child.name {
                "Scope" => self.scope(child)?,
                "ScopeEdge" => {
                    let [id, annotation, source, target] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    self.leaf(&child)?;
                    pending_edges.push((
                        id,
                        annotation,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                }
                _ => return Err(self.unexpected(&child, "ScopeHierarchy")),
            }
        }
        let mut edge_ids = FxHashSet::default();
        let offsets: Vec<usize> = pending_edges.iter().map(|(_, _, edge)| edge.offset).collect();
        for (id, annotation, edge) in pending_edges {
            if !edge_ids.insert(id) {
                self.duplicate_edge(edge.offset, edge.element, id, "ScopeHierarchy")?;
            }
            let lookup = |end: Name, which: &str| {
                self.scope_ids.get(&end).copied().ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no scope", self.cg.names.get(end)),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            self.cg.scope_edges.push(ScopeEdge { id, annotation, source, target });
        }
        check::scope_tree(&self.cg, &offsets, &mut self.problems);
        Ok(())
    }

    fn scope(&mut self, elem: Elem<'a>) -> Result<()> {
        let [id, annotation] = self.attrs(&elem, ["vertex_id", "annotation"])?;
        let id = match &id {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        };
        let annotation = self.intern(&annotation);
        if self.scope_ids.contains_key(&id) {
            return Err(self.error(
                elem.offset,
                elem.name,
                format!("duplicate vertex_id '{}' in ScopeHierarchy", self.cg.names.get(id)),
            ));
        }
        let scope = self.cg.scopes.alloc(Scope { id, annotation, symbols: Vec::new() });
        self.scope_ids.insert(id, scope);
        let mut tables = 0;
        while let Some(child) = self.children(&elem)? {
            if child.name != "SymbolTable" {
                return Err(self.unexpected(&child, "Scope"));
            }
            tables += 1;
            let [] = self.attrs(&child, [])?;
            while let Some(symbol) = self.children(&child)? {
                if symbol.name != "Symbol" {
                    return Err(self.unexpected(&symbol, "SymbolTable"));
                }
                self.symbol(symbol, scope)?;
            }
        }
        if tables == 0 {
            return Err(self.error(elem.offset, elem.name, "missing required child SymbolTable"));
        }
        Ok(())
    }

    fn symbol(&mut self, elem: Elem<'a>, scope: ScopeId) -> Result<()> {
        let [symbol_id, kind, ty, fe_type, shape, annotation, active, temp, pointer] = self.attrs(
            &elem,
            ["symbol_id", "kind", "type", "feType", "shape", "annotation", "active", "temp", "pointer"],
        )?;
        let name = self.intern_required(&elem, "symbol_id", &symbol_id)?;
        let kind = self.enumerated(
            &elem,
            "kind",
            &kind,
            SymbolKind::Variable,
            &[
                ("subroutine", SymbolKind::Subroutine),
                ("variable", SymbolKind::Variable),
                ("pointer", SymbolKind::Pointer),
            ],
        )?;
        let ty = self.symbol_type(&elem, "type", &ty)?;
        let shape = self.shape(&elem, "shape", &shape)?;
        let symbol = Symbol {
            scope,
            name,
            kind,
            ty,
            fe_type: self.intern(&fe_type),
            shape,
            annotation: self.intern(&annotation),
            active: self.boolean(&elem, "active", &active, true)?,
            temp: self.boolean(&elem, "temp", &temp, false)?,
            pointer: self.boolean(&elem, "pointer", &pointer, false)?,
            dimensions: Vec::new(),
        };
        if self.cg.lookup_symbol(scope, name).is_some() {
            let scope_name = self.cg.names.get(self.cg.scopes[scope].id);
            return Err(self.error(
                elem.offset,
                elem.name,
                format!("duplicate symbol_id '{}' in scope {scope_name}", self.cg.names.get(name)),
            ));
        }
        let id = self.cg.add_symbol(symbol);
        while let Some(child) = self.children(&elem)? {
            if child.name != "DimensionBounds" {
                return Err(self.unexpected(&child, "Symbol"));
            }
            let [lower, upper] = self.attrs(&child, ["lower", "upper"])?;
            let lower = self.required(&child, "lower", &lower).and_then(|v| self.integer(&child, "lower", v))?;
            let upper = self.required(&child, "upper", &upper).and_then(|v| self.integer(&child, "upper", v))?;
            self.leaf(&child)?;
            let dims = &mut self.cg.symbols[id].dimensions;
            if dims.len() == 7 {
                return Err(self.error(child.offset, child.name, "more than 7 DimensionBounds"));
            }
            dims.push(DimensionBounds { lower, upper });
        }
        Ok(())
    }

    pub(super) fn symbol_type(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<SymbolType> {
        self.enumerated(
            elem,
            name,
            value,
            SymbolType::Real,
            &[
                ("void", SymbolType::Void),
                ("integer", SymbolType::Integer),
                ("real", SymbolType::Real),
                ("complex", SymbolType::Complex),
                ("bool", SymbolType::Bool),
                ("char", SymbolType::Char),
                ("string", SymbolType::String),
                ("opaque", SymbolType::Opaque),
            ],
        )
    }

    pub(super) fn shape(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<Shape> {
        self.enumerated(
            elem,
            name,
            value,
            Shape::Scalar,
            &[
                ("void", Shape::Void),
                ("scalar", Shape::Scalar),
                ("vector", Shape::Vector),
                ("matrix", Shape::Matrix),
                ("three_tensor", Shape::ThreeTensor),
                ("four_tensor", Shape::FourTensor),
                ("five_tensor", Shape::FiveTensor),
                ("six_tensor", Shape::SixTensor),
                ("seven_tensor", Shape::SevenTensor),
            ],
        )
    }

    pub(super) fn alias_set_map(&mut self, elem: Elem<'a>) -> Result<()> {
        let [] = self.attrs(&elem, [])?;
        while let Some(child) = self.children(&elem)? {
            if child.name != "AliasSet" {
                return Err(self.unexpected(&child, "AliasSetMap"));
            }
            let [key] = self.attrs(&child, ["key"])?;
            let key = self.required(&child, "key", &key).and_then(|v| self.non_negative(&child, "key", v))?;
            if self.alias_keys.sets.contains_key(&key) {
                return Err(self.error(child.offset, child.name, format!("duplicate key {key} in AliasSetMap")));
            }
            let mut ranges = Vec::new();
            while let Some(range) = self.children(&child)? {
                if range.name != "AliasRange" {
                    return Err(self.unexpected(&range, "AliasSet"));
                }
                let [from, to, partial] =
                    self.attrs(&range, ["from_virtual_address", "to_virtual_address", "partial"])?;
                let from = self
                    .required(&range, "from_virtual_address", &from)
                    .and_then(|v| self.positive(&range, "from_virtual_address", v))?;
                let to = self
                    .required(&range, "to_virtual_address", &to)
                    .and_then(|v| self.positive(&range, "to_virtual_address", v))?;
                let partial = self.boolean(&range, "partial", &partial, true)?;
                self.leaf(&range)?;
                ranges.push(AliasRange { from, to, partial });
            }
            self.alias_keys.sets.insert(key, AliasSetId(self.cg.alias_sets.len() as u32));
            self.cg.alias_sets.push(AliasSet { key, ranges });
        }
        if self.cg.alias_sets.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child AliasSet"));
        }
        if !self.alias_keys.sets.contains_key(&0) {
            self.missing_key_zero(&elem, "AliasSet", self.alias_keys.attribute)?;
            self.alias_keys.sets.insert(0, AliasSetId(self.cg.alias_sets.len() as u32));
            self.cg.alias_sets.push(AliasSet { key: 0, ranges: Vec::new() });
        }
        Ok(())
    }

    /// A map without the dummy key 0, which every reference without the map's attribute means
    /// and whose existence the schema's key references demand: an empty one is added.
    fn missing_key_zero(&mut self, map: &Elem<'a>, set: &str, attribute: &str) -> Result<()> {
        let added = if self.strict { "" } else { " (an empty one is added)" };
        let message = format!("no {set} with key 0, which every {attribute} attribute defaults to{added}");
        self.lenient(map.offset, map.name, message)
    }

    pub(super) fn stmt_id_set_map(&mut self, elem: &Elem<'a>) -> Result<Vec<StmtIdSet>> {
        let [] = self.attrs(elem, [])?;
        let mut sets: Vec<StmtIdSet> = Vec::new();
        let mut keys = FxHashMap::default();
        while let Some(child) = self.children(elem)? {
            if child.name == "DUUDSet" && elem.name == "DUUDSetMap" {
                self.lenient(child.offset, child.name, "old name of StmtIdSet".into())?;
            } else if child.name != "StmtIdSet" {
                return Err(self.unexpected(&child, elem.name));
            }
            let [key] = self.attrs(&child, ["key"])?;
            let key = self.required(&child, "key", &key).and_then(|v| self.non_negative(&child, "key", v))?;
            if keys.insert(key, ()).is_some() {
                return Err(self.error(child.offset, child.name, format!("duplicate key {key} in {}", elem.name)));
            }
            let mut statements = Vec::new();
            while let Some(id) = self.children(&child)? {
                if id.name != "StatementId" {
                    return Err(self.unexpected(&id, "StmtIdSet"));
                }
                let [id_ref] = self.attrs(&id, ["idRef"])?;
                statements.push(self.intern(&id_ref));
                self.leaf(&id)?;
            }
            sets.push(StmtIdSet { key, statements });
        }
        if sets.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child StmtIdSet"));
        }
        if !keys.contains_key(&0) {
            let attribute = if elem.name == "DOSetMap" { "do_chain" } else { "du_ud" };
            self.missing_key_zero(elem, "StmtIdSet", attribute)?;
            sets.push(StmtIdSet { key: 0, statements: Vec::new() });
        }
        Ok(sets)
    }
}
