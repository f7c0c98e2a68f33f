//! `completions` and `man`: the shell completion scripts and the manual page, both made from
//! the switches' definitions so they cannot drift from what the command line accepts.

use std::io::Write;

use super::args::CompletionsArgs;
use super::{Outcome, print_stdout};

pub fn completions(args: &CompletionsArgs) -> Outcome {
    let mut command = super::args::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "xaifbooster", &mut script);
    print_stdout(String::from_utf8_lossy(&script).into_owned())?;
    Ok(Ok(()))
}

pub fn man() -> Outcome {
    let mut roff = Vec::new();
    let mut command = super::args::command();
    // Builds the subcommands' deferred arguments (see `Command`).
    command.build();
    // The main page's sections one by one: clap_mangen's own list of subcommands names a page
    // for each (`xaifbooster-tangent(1)`), and there are none; here each is a section below.
    let main = clap_mangen::Man::new(command.clone());
    main.render_title(&mut roff)?;
    main.render_name_section(&mut roff)?;
    main.render_synopsis_section(&mut roff)?;
    main.render_description_section(&mut roff)?;
    main.render_options_section(&mut roff)?;
    writeln!(roff, ".SH SUBCOMMANDS\nEach has a section of its own below, with its synopsis and switches.")?;
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(roff, ".TP\n\\fBxaifbooster {}\\fR\n{}", sub.get_name(), roff_escape(&about))?;
    }
    main.render_version_section(&mut roff)?;
    // Each subcommand's synopsis and switches follow the main page, so one page documents
    // every switch.
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
        let sub = sub.clone().bin_name(format!("xaifbooster {}", sub.get_name()));
        let title = sub.get_name().to_uppercase();
        let about = sub.get_long_about().or(sub.get_about()).map(|a| a.to_string()).unwrap_or_default();
        writeln!(roff, ".SH \"{title}\"\n{}", roff_escape(&about))?;
        let man = clap_mangen::Man::new(sub);
        man.render_synopsis_section(&mut roff)?;
        man.render_options_section(&mut roff)?;
    }
    print_stdout(String::from_utf8_lossy(&roff).into_owned())?;
    Ok(Ok(()))
}

/// Text for a roff paragraph: a backslash doubled, a leading dot or quote protected.
fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with('.') || line.starts_with('\'') { format!("\\&{line}") } else { line }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
