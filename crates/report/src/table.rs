//! A table of text cells, printed as aligned columns for a terminal or as a
//! GitHub-flavoured Markdown table for docs. Columns whose cells all read as
//! numbers (optionally signed, with a trailing `%`) are right-aligned.

/// Headers and rows of cells; a row shorter than the headers is padded with
/// empty cells, a longer one keeps its extra cells (with empty headers).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A Markdown table: header row, alignment row, one line per row; `|`
    /// inside cells is escaped.
    pub fn to_markdown(&self) -> String {
        let columns = self.columns();
        let line = |cells: Vec<&str>| {
            let escaped: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            format!("| {} |\n", escaped.join(" | "))
        };
        let mut out = line((0..columns).map(|c| self.header(c)).collect());
        let rule: Vec<&str> = (0..columns)
            .map(|c| if self.numeric(c) { "---:" } else { "---" })
            .collect();
        out += &format!("|{}|\n", rule.join("|"));
        for row in &self.rows {
            out += &line((0..columns).map(|c| cell(row, c)).collect());
        }
        out
    }

    /// Aligned columns separated by two spaces, the headers underlined.
    pub fn to_text(&self) -> String {
        let columns = self.columns();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|row| cell(row, c).chars().count())
                    .chain([self.header(c).chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(c, text)| {
                    if self.numeric(c) {
                        format!("{text:>width$}", width = widths[c])
                    } else {
                        format!("{text:<width$}", width = widths[c])
                    }
                })
                .collect();
            format!("{}\n", padded.join("  ").trim_end())
        };
        let mut out = line((0..columns).map(|c| self.header(c)).collect());
        let rules: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        out += &line(rules.iter().map(String::as_str).collect());
        for row in &self.rows {
            out += &line((0..columns).map(|c| cell(row, c)).collect());
        }
        out
    }

    fn columns(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0)
    }

    fn header(&self, column: usize) -> &str {
        self.headers.get(column).map_or("", String::as_str)
    }

    /// True when every non-empty cell of the column reads as a number.
    fn numeric(&self, column: usize) -> bool {
        let mut cells = self.rows.iter().map(|row| cell(row, column)).filter(|c| !c.is_empty());
        let mut any = false;
        let all = cells.all(|c| {
            any = true;
            looks_numeric(c)
        });
        any && all
    }
}

fn cell(row: &[String], column: usize) -> &str {
    row.get(column).map_or("", String::as_str)
}

/// `1.5`, `-3`, `+2.1%`, `12 %`, `—` (a dash standing for no value).
fn looks_numeric(text: &str) -> bool {
    let text = text.trim();
    if text == "-" || text == "—" {
        return true;
    }
    let number = text.trim_end_matches('%').trim_end().trim_start_matches('+');
    number.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            headers: vec!["scenario".into(), "median s".into(), "vs os".into()],
            rows: vec![
                vec!["C.1".into(), "2.05".into(), "—".into()],
                vec!["C.2 | spin".into(), "12.5".into(), "-41.2%".into()],
            ],
        }
    }

    #[test]
    fn markdown_has_a_header_an_alignment_row_and_one_line_per_row() {
        let md = table().to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "| scenario | median s | vs os |");
        assert_eq!(lines[1], "|---|---:|---:|");
        assert_eq!(lines[2], "| C.1 | 2.05 | — |");
        assert_eq!(lines[3], "| C.2 \\| spin | 12.5 | -41.2% |");
        // Every line has the same number of unescaped separators.
        let bars = |l: &str| l.replace("\\|", "").matches('|').count();
        assert!(lines.iter().all(|l| bars(l) == 4), "{md}");
    }

    #[test]
    fn text_columns_are_aligned_and_numbers_right_aligned() {
        let text = table().to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "scenario    median s   vs os");
        assert_eq!(lines[1], "----------  --------  ------");
        assert_eq!(lines[2], "C.1             2.05       —");
        assert_eq!(lines[3], "C.2 | spin      12.5  -41.2%");
    }

    #[test]
    fn short_rows_are_padded_and_long_rows_kept() {
        let t = Table {
            headers: vec!["a".into()],
            rows: vec![vec![], vec!["x".into(), "y".into()]],
        };
        let md = t.to_markdown();
        assert_eq!(md.lines().next(), Some("| a |  |"));
        assert_eq!(md.lines().nth(2), Some("|  |  |"));
        assert_eq!(md.lines().nth(3), Some("| x | y |"));
    }
}
