//! The validator's findings on small documents, and the progress it reports.

use super::*;

const HEAD: &str = r#"<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF">
<xaif:ScopeHierarchy><xaif:Scope vertex_id="1"><xaif:SymbolTable>
<xaif:Symbol symbol_id="head" kind="subroutine"/><xaif:Symbol symbol_id="x"/>
</xaif:SymbolTable></xaif:Scope></xaif:ScopeHierarchy>
<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>
<xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>
<xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
"#;

fn messages(body: &str, strict: bool) -> Vec<String> {
    let text = format!("{HEAD}{body}</xaif:CallGraph>");
    validate(text.as_bytes(), "t.xaif", &ValidateOptions { strict, activity: true })
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_well_formed_routine_has_no_findings() {
    let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
</xaif:ControlFlowGraph>"#;
    assert_eq!(messages(body, true), Vec::<String>::new());
}

#[test]
fn every_finding_is_reported_in_document_order() {
    let body = r#"<xaif:ControlFlowGraph symbol_id="nobody" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:Entry vertex_id="1"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="9" has_condition_value="maybe"/>
</xaif:ControlFlowGraph>"#;
    assert_eq!(
        messages(body, false),
        vec![
            "t.xaif:8:1: ControlFlowGraph: needs exactly one Entry vertex, found 2",
            "t.xaif:8:1: ControlFlowGraph: needs exactly one Exit vertex, found 0",
            "t.xaif:8:1: ControlFlowGraph: symbol 'nobody' is not declared in scope 1",
            "t.xaif:9:28: Entry: duplicate vertex_id '1' in ControlFlowGraph",
            "t.xaif:10:1: ControlFlowEdge: attribute 'has_condition_value' has value 'maybe', expected a boolean (true, false, 1, 0)",
            "t.xaif:10:1: ControlFlowEdge: target '9' names no vertex of this ControlFlowGraph",
        ]
    );
}

#[test]
fn lenient_findings_are_warnings_unless_strict() {
    let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1" colour="red">
<xaif:Entry vertex_id="1"/><xaif:Exit vertex_id="2"/><xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
</xaif:ControlFlowGraph>"#;
    assert_eq!(
        messages(body, false),
        vec!["t.xaif:8:1: warning: ControlFlowGraph: unknown attribute 'colour' (dropped)"]
    );
    assert_eq!(messages(body, true), vec!["t.xaif:8:1: ControlFlowGraph: unknown attribute 'colour'"]);
}

/// `x` has neither `type` nor `active`: by the schema's defaults it is an active real, so a
/// real constant may not stand for it; an integer constant is not real data and is skipped.
#[test]
fn the_activity_check_applies_schema_defaults_and_is_off_for_inputs() {
    let body = r#"<xaif:ControlFlowGraph symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" symbol_id="x" scope_id="1"/></xaif:ArgumentList>
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:SubroutineCall statement_id="c1" symbol_id="head" scope_id="1" formalArgCount="1">
<xaif:Argument position="1"><xaif:Constant type="real" value="1.0"/></xaif:Argument></xaif:SubroutineCall>
<xaif:SubroutineCall statement_id="c2" symbol_id="head" scope_id="1" formalArgCount="1">
<xaif:Argument position="1"><xaif:Constant type="integer" value="1"/></xaif:Argument></xaif:SubroutineCall>
</xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#;
    assert_eq!(
        messages(body, true),
        vec![
            "t.xaif:12:1: Argument: argument 1 of the call to 'head' (statement c1): actual constant 1.0 is passive, \
             formal 'x' is active"
        ]
    );
    let text = format!("{HEAD}{body}</xaif:CallGraph>");
    assert_eq!(validate(text.as_bytes(), "t.xaif", &ValidateOptions { strict: true, activity: false }), Vec::new());
}

/// The fragment-wise checks find exactly what the whole document's tree finds: over the
/// test data, documents with findings at the top level, and a few mutations of each file.
#[test]
fn the_checks_survey_documents_as_the_streaming_driver_would() {
    let routine = |name: &str, ids: [&str; 2]| {
        format!(
            r#"<xaif:ControlFlowGraph vertex_id="r" symbol_id="{name}" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:Marker statement_id="{}"/><xaif:Marker statement_id="{}"/></xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#,
            ids[0], ids[1]
        )
    };
    let mut documents = vec![
        // Ids repeated across routines are fine; within one, the document is read whole.
        format!("{HEAD}{}{}</xaif:CallGraph>", routine("head", ["m1", "m2"]), routine("x", ["m1", "m3"])),
        format!("{HEAD}{}{}</xaif:CallGraph>", routine("head", ["m1", "m2"]), routine("x", ["m3", "m3"])),
        // Ids the parser decodes: the routine's name, then a statement's.
        format!("{HEAD}{}</xaif:CallGraph>", routine("h&#101;ad", ["m1", "m2"])),
        format!("{HEAD}{}</xaif:CallGraph>", routine("head", ["m&amp;1", "m2"])),
        format!("{HEAD}<!-- {} --></xaif:CallGraph>", routine("head", ["m1", "m2"])),
    ];
    let testdata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tangent");
    for entry in std::fs::read_dir(testdata).expect("test data").flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            documents.push(text);
        }
    }
    let mut surveyed = [0usize; 2];
    for text in &documents {
        let progress = Progress::default();
        let fragment_wise = fragments::check_in_windows(text, "t.xaif", false, Some(&progress), 1);
        match progress.take_survey() {
            Some(found) => {
                let own = Survey::of(text.as_bytes());
                surveyed[usize::from(own.is_err())] += 1;
                assert_eq!(found, own, "{text}");
            }
            // The checks survey every document they check in pieces.
            None => assert!(fragment_wise.is_none(), "{text}"),
        }
        // Taken once.
        assert!(progress.take_survey().is_none());
    }
    assert!(surveyed[0] >= documents.len() / 2 && surveyed[1] >= 2, "{surveyed:?} of {}", documents.len());
}

/// Asking without waiting answers what waiting would, as the checks advance and after an
/// error.
#[test]
fn checked_for_answers_what_wait_for_would() {
    let progress = Progress::default();
    assert_eq!(progress.checked_for(10), None);
    progress.advance(10);
    assert_eq!(progress.checked_for(10), Some(true));
    assert_eq!(progress.checked_for(11), None);
    assert!(progress.wait_for(10));
    progress.fail();
    assert_eq!(progress.checked_for(11), Some(false));
    assert!(!progress.wait_for(11));
    progress.finish(true);
    assert_eq!(progress.checked_for(usize::MAX), Some(false), "an error stays");
}

#[test]
fn fragment_wise_findings_are_the_whole_documents() {
    fn xaif_files(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("test data").flatten() {
            let path = entry.path();
            if path.is_dir() {
                xaif_files(&path, files);
            } else if path.extension().is_some_and(|e| e == "xaif") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    xaif_files(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata"), &mut files);
    files.sort();
    let mut documents: Vec<String> = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        let Ok(text) = String::from_utf8(bytes) else { continue };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned();
        // Mutations: a line dropped, a line repeated, text and a comment at the top level.
        let lines: Vec<&str> = text.lines().collect();
        for k in [lines.len() / 3, lines.len() / 2, lines.len().saturating_sub(3)] {
            let mut dropped = lines.clone();
            if k < dropped.len() {
                dropped.remove(k);
            }
            documents.push(dropped.join("\n"));
            let mut repeated = lines.clone();
            if k < repeated.len() {
                repeated.insert(k, lines[k]);
            }
            documents.push(repeated.join("\n"));
        }
        documents.push(text.replacen("<xaif:AliasSetMap", "oops <!-- c --> &amp; <xaif:AliasSetMap", 1));
        documents.push(text);
    }
    let head = HEAD.replace(
        "<xaif:AliasSetMap>",
        "<!-- comment --> text <![CDATA[x]]> <?pi?><xaif:CallGraphEdge edge_id=\"1\" source=\"1\" target=\"9\"/>\
         <xaif:AliasSetMap>",
    );
    let routine = r#"<xaif:ControlFlowGraph vertex_id="r" symbol_id="head" scope_id="1" controlflowgraph_scope_id="1">
<xaif:Entry vertex_id="1"/><xaif:BasicBlock vertex_id="2" scope_id="1">
<xaif:Marker statement_id="m1"/></xaif:BasicBlock><xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/><xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
</xaif:ControlFlowGraph>"#;
    documents.extend([
        format!("{head}{routine}{routine}</xaif:CallGraph>"),
        format!("{HEAD}{routine}<x:Other xmlns:x=\"urn:x\"><x:a/></x:Other>\n<ReplacementList/></xaif:CallGraph>"),
        format!("{}{routine}</xaif:CallGraph>", HEAD.replace("<xaif:AliasSetMap>", "<xaif:DOSetMap/><xaif:AliasSetMap>")),
        format!("{}{routine}</xaif:CallGraph>", HEAD.replace("key=\"0\"/></xaif:DUUDSetMap>", "key=\"0\"><xaif:StatementId idRef=\"m1\"/><xaif:StatementId idRef=\"m2\"/></xaif:StmtIdSet></xaif:DUUDSetMap>")),
        // A `StatementId` out of place, in a routine: its idRef is looked up all the same.
        format!(
            "{HEAD}{routine}{}</xaif:CallGraph>",
            routine.replace("<xaif:Marker statement_id=\"m1\"/>", "<xaif:StatementId idRef=\"m1\"/><xaif:StatementId idRef=\"m3\"/>")
        ),
        format!("{}{routine}</xaif:CallGraph>", HEAD.replace("xmlns:xaif=", "alias=\"3\" colour=\"red\" xmlns:xaif=")),
        format!("{HEAD}{routine}</xaif:CallGraph><!-- after -->\n"),
        format!("{HEAD}</xaif:CallGraph>"),
        "<xaif:CallGraph xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\"/>".to_owned(),
        "<CallGraph><ScopeHierarchy/></CallGraph>".to_owned(),
    ]);
    let mut pieces = 0;
    for text in &documents {
        for strict in [false, true] {
            let options = ValidateOptions { strict, activity: false };
            let whole = check_whole(text, "t.xaif", &options, Checks::All);
            // One child after the other, and three at a time on every core.
            let in_parallel = fragments::check_in_windows(text, "t.xaif", strict, None, 3);
            match fragments::check_in_windows(text, "t.xaif", strict, None, 1) {
                Some(fragment_wise) => {
                    assert_eq!(in_parallel.as_ref(), Some(&fragment_wise), "{text}");
                    assert_eq!(Ok(fragment_wise), whole, "{text}");
                    pieces += 1;
                }
                // Only malformed documents, or too deep ones, are checked whole.
                None if in_parallel.is_some() => panic!("checked whole one child at a time only: {text}"),
                None => assert!(
                    whole.as_ref().is_err()
                        || whole.as_ref().is_ok_and(|f| f.iter().any(|f| f.message.contains("nest deeper"))),
                    "{text}"
                ),
            }
        }
    }
    assert!(pieces >= files.len() * 2, "{pieces} of {} checked in pieces", documents.len() * 2);
}
