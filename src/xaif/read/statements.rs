//! The statements of basic blocks: assignments, calls, markers and derivative propagators.

use std::borrow::Cow;

use super::{Elem, Lower, Result, RightHandSides};
use crate::ir::*;
use crate::xaif::check::Problem;

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- statements

    pub(super) fn statements(&mut self, block: &Elem<'a>) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        while let Some(child) = self.children(block)? {
            if matches!(child.name, "Assignment" | "SubroutineCall" | "Marker") {
                self.statements.push((child.offset, child.name));
            }
            let statement = match child.name {
                "Assignment" => Statement::Assignment(self.assignment(child)?),
                "SubroutineCall" => Statement::SubroutineCall(self.subroutine_call(child)?),
                "Marker" => {
                    let [id, annotation] = self.attrs(&child, ["statement_id", "annotation"])?;
                    let id = self.intern_required(&child, "statement_id", &id)?;
                    let annotation = self.intern(&annotation);
                    self.leaf(&child)?;
                    Statement::Marker(Marker { id, annotation })
                }
                "DerivativePropagator" => Statement::DerivativePropagator(self.derivative_propagator(child)?),
                "InlinableSubroutineCall" => {
                    let [name, id] = self.attrs(&child, ["subroutine_name", "statement_id"])?;
                    let subroutine_name = self.intern_required(&child, "subroutine_name", &name)?;
                    let id = self.intern_required(&child, "statement_id", &id)?;
                    let arguments = self.arguments(&child)?;
                    Statement::InlinableSubroutineCall(InlinableSubroutineCall { id, subroutine_name, arguments })
                }
                _ => return Err(self.unexpected(&child, block.name)),
            };
            statements.push(statement);
        }
        Ok(statements)
    }

    /// `Assignment`, and the `Initialization`/`Update` of a `ForLoop` (same content model).
    pub(super) fn assignment(&mut self, elem: Elem<'a>) -> Result<Assignment> {
        let [id, do_chain, line] = self.attrs(&elem, ["statement_id", "do_chain", "lineNumber"])?;
        if line.is_some() && elem.name != "Assignment" {
            return Err(self.error(elem.offset, elem.name, "attribute 'lineNumber' is not allowed here"));
        }
        let id = self.intern_required(&elem, "statement_id", &id)?;
        let do_chain = self.set_ref(&elem, &do_chain, &self.do_keys)?;
        let line = self.opt_non_negative(&elem, "lineNumber", &line)?;
        let mut lhs = None;
        let mut rhs = None;
        while let Some(child) = self.children(&elem)? {
            match child.name {
                "AssignmentLHS" if lhs.is_none() => lhs = Some(self.variable_reference_with_live(child)?),
                "AssignmentRHS" if lhs.is_some() && rhs.is_none() => {
                    rhs = Some(match self.right_hand_sides {
                        RightHandSides::Lower => self.expression(child)?,
                        RightHandSides::ReferencesOnly => self.references_only(child)?,
                    });
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            }
        }
        let Some((lhs, lhs_live)) = lhs else {
            return Err(self.error(elem.offset, elem.name, "missing required child AssignmentLHS"));
        };
        let Some(rhs) = rhs else {
            return Err(self.error(elem.offset, elem.name, "missing required child AssignmentRHS"));
        };
        Ok(Assignment { id, do_chain, line, lhs, lhs_live, rhs })
    }

    fn subroutine_call(&mut self, elem: Elem<'a>) -> Result<SubroutineCall> {
        let [id, symbol_id, scope_id, active, line, count] =
            self.attrs(&elem, ["statement_id", "symbol_id", "scope_id", "active", "lineNumber", "formalArgCount"])?;
        let id = self.intern_required(&elem, "statement_id", &id)?;
        let symbol = if symbol_id.is_some() || scope_id.is_some() {
            Some(self.symbol_ref(&elem, &symbol_id, &scope_id)?)
        } else {
            None
        };
        let active = self.active_use(&elem, &active)?;
        let line = self.opt_non_negative(&elem, "lineNumber", &line)?;
        let formal_arg_count = match count.as_deref() {
            Some(v) => self.count(&elem, "formalArgCount", v)?,
            None => {
                let message = if self.strict { "" } else { " (inferred)" };
                let message = format!("missing required attribute 'formalArgCount'{message}");
                self.lenient(elem.offset, elem.name, message)?;
                self.calls_without_count += 1;
                u32::MAX
            }
        };
        let arguments = self.arguments(&elem)?;
        Ok(SubroutineCall { id, symbol, active, line, formal_arg_count, arguments })
    }

    pub(super) fn active_use(&self, elem: &Elem<'a>, value: &Option<Cow<'a, str>>) -> Result<ActiveUse> {
        self.enumerated(
            elem,
            "active",
            value,
            ActiveUse::Undefined,
            &[
                ("undefined", ActiveUse::Undefined),
                ("true", ActiveUse::True),
                ("false", ActiveUse::False),
                ("1", ActiveUse::True),
                ("0", ActiveUse::False),
            ],
        )
    }

    fn arguments(&mut self, call: &Elem<'a>) -> Result<Vec<Argument>> {
        let mut arguments = Vec::new();
        let mut offsets = Vec::new();
        while let Some(child) = self.children(call)? {
            if child.name != "Argument" {
                return Err(self.unexpected(&child, call.name));
            }
            let [position, annotation] = self.attrs(&child, ["position", "annotation"])?;
            let position = self
                .required(&child, "position", &position)
                .and_then(|v| self.argument_position(&child, "position", v))?;
            let annotation = self.intern(&annotation);
            let mut value = None;
            while let Some(inner) = self.children(&child)? {
                if value.is_some() {
                    return Err(self.unexpected(&inner, "Argument"));
                }
                value = Some(match inner.name {
                    "VariableReference" => ArgumentValue::Variable(self.variable_reference(inner)?),
                    "Constant" => ArgumentValue::Constant(self.constant(inner)?),
                    _ => return Err(self.unexpected(&inner, "Argument")),
                });
            }
            let Some(value) = value else {
                return Err(self.error(child.offset, child.name, "needs a VariableReference or a Constant"));
            };
            offsets.push((position, child.offset, child.name));
            arguments.push(Argument { position, annotation, value });
        }
        self.repeated_positions(offsets, &format!("among the arguments of the {}", call.name));
        Ok(arguments)
    }

    /// Reports each argument whose position an earlier one of the same list took.
    pub(super) fn repeated_positions(&mut self, mut arguments: Vec<(u32, usize, &str)>, list: &str) {
        arguments.sort_by_key(|&(position, offset, _)| (position, offset));
        for pair in arguments.windows(2) {
            let (position, offset, element) = pair[1];
            if pair[0].0 == position {
                let message = format!("position {position} is taken twice {list}");
                self.problems.push(Problem::error(offset, element, message));
            }
        }
    }

    fn derivative_propagator(&mut self, elem: Elem<'a>) -> Result<DerivativePropagator> {
        let [] = self.attrs(&elem, [])?;
        let mut entries = Vec::new();
        while let Some(child) = self.children(&elem)? {
            let entry = match child.name {
                "SetDeriv" | "SetNegDeriv" | "IncDeriv" | "DecDeriv" => {
                    let [] = self.attrs(&child, [])?;
                    let target = self.named_reference(&child, "Tgt")?;
                    let source = self.named_reference(&child, "Src")?;
                    if let Some(extra) = self.children(&child)? {
                        return Err(self.unexpected(&extra, child.name));
                    }
                    match child.name {
                        "SetDeriv" => PropagatorEntry::SetDeriv { target, source },
                        "SetNegDeriv" => PropagatorEntry::SetNegDeriv { target, source },
                        "IncDeriv" => PropagatorEntry::IncDeriv { target, source },
                        _ => PropagatorEntry::DecDeriv { target, source },
                    }
                }
                "Sax" | "Saxpy" => {
                    let [] = self.attrs(&child, [])?;
                    let mut terms = Vec::new();
                    let mut y = None;
                    while let Some(part) = self.children(&child)? {
                        match part.name {
                            "AX" if y.is_none() => {
                                let [] = self.attrs(&part, [])?;
                                let Some(a) = self.children(&part)? else {
                                    return Err(self.error(part.offset, part.name, "missing required child A"));
                                };
                                if a.name != "A" {
                                    return Err(self.unexpected(&a, "AX"));
                                }
                                let a = self.expression(a)?;
                                let x = self.named_reference(&part, "X")?;
                                if let Some(extra) = self.children(&part)? {
                                    return Err(self.unexpected(&extra, "AX"));
                                }
                                terms.push(ScaledTerm { a, x });
                            }
                            "Y" if y.is_none() && !terms.is_empty() => y = Some(self.variable_reference(part)?),
                            _ => return Err(self.unexpected(&part, child.name)),
                        }
                    }
                    let Some(y) = y else {
                        return Err(self.error(child.offset, child.name, "missing required child Y"));
                    };
                    if child.name == "Sax" {
                        PropagatorEntry::Sax { terms, y }
                    } else {
                        PropagatorEntry::Saxpy { terms, y }
                    }
                }
                "ZeroDeriv" => PropagatorEntry::ZeroDeriv(self.variable_reference(child)?),
                _ => return Err(self.unexpected(&child, "DerivativePropagator")),
            };
            entries.push(entry);
        }
        Ok(DerivativePropagator { entries })
    }

    /// The next child, which must be the variable reference element `name`.
    fn named_reference(&mut self, parent: &Elem<'a>, name: &str) -> Result<VariableReference> {
        match self.children(parent)? {
            Some(child) if child.name == name => self.variable_reference(child),
            Some(child) => Err(self.unexpected(&child, parent.name)),
            None => Err(self.error(parent.offset, parent.name, format!("missing required child {name}"))),
        }
    }
}
