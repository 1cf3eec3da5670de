//! Text to syntax tree: the `--where` grammar of `docs/cli.md`.
//!
//! ```text
//! condition  := or
//! or         := and ( "or" and )*
//! and        := unary ( "and" unary )*
//! unary      := "not" unary | "(" or ")" | predicate
//! predicate  := field op literal | literal op field
//!             | field ["not"] "in" "[" literal ( "," literal )* [","] "]"
//!             | field "is" ["not"] "null"
//! op         := "<" | "<=" | ">" | ">=" | "=" | "==" | "!="
//! field      := identifier | "`" any text, with \` and \\ escapes "`"
//! literal    := string | ["+" | "-"] number | ["+" | "-"] ("nan" | "inf" | "infinity")
//!             | "true" | "false"
//! ```
//!
//! Keywords are case-insensitive. Strings take single or double quotes and the escapes `\\`,
//! `\'`, `\"`, `\n`, `\r`, `\t`, `\0`, `\xHH` (one byte) and `\u{HEX}` (a character as UTF-8).
//! Identifiers start with a letter or `_` and continue with letters, digits, `_` and `.`.
//! Errors carry the 1-based character column of the offending token.

use tessera_fragment::ConditionOp;

use crate::{Error, Result};

/// Deepest nesting of parentheses and `not`s accepted.
const MAX_DEPTH: usize = 200;

/// A condition as written, before fields and values are resolved against a schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Syntax {
    /// All of the operands hold (two or more).
    And(Vec<Syntax>),
    /// Any of the operands holds (two or more).
    Or(Vec<Syntax>),
    /// The operand does not hold (libtiledb negates the operators below it).
    Not(Box<Syntax>),
    /// A test on one field.
    Pred(Pred),
}

/// A test on one field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pred {
    /// The field name.
    pub(crate) field: String,
    /// Byte offset of the field name in the text.
    pub(crate) field_pos: usize,
    /// The test.
    pub(crate) kind: PredKind,
}

/// What a predicate tests.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PredKind {
    /// A comparison (`Lt`..`Ne`), with the field on the left.
    Cmp {
        /// The operator.
        op: ConditionOp,
        /// Byte offset of the operator.
        op_pos: usize,
        /// The value.
        value: Lit,
    },
    /// Set membership (`in`, or `not in` when `negated`).
    In {
        /// `not in`.
        negated: bool,
        /// The members, in order (at least one).
        values: Vec<Lit>,
    },
    /// `is null` (`is not null` when `negated`).
    Null {
        /// `is not null`.
        negated: bool,
    },
}

/// A literal value with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lit {
    /// The value.
    pub(crate) kind: LitKind,
    /// Byte offset of the literal (its sign, if any).
    pub(crate) pos: usize,
}

/// The kinds of literal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LitKind {
    /// A number as written, sign included (`-12`, `1.5e3`, `-inf`, `nan`).
    Num {
        /// The text, with a leading `-` when negative (no `+`).
        text: String,
        /// Written without a fraction or exponent (and not nan/inf).
        integer: bool,
    },
    /// A string's bytes.
    Str(Vec<u8>),
    /// `true` or `false`.
    Bool(bool),
}

impl LitKind {
    /// How the literal reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            LitKind::Num { text, .. } => text.clone(),
            LitKind::Str(b) => format!("the string {}", quote_bytes(b)),
            LitKind::Bool(b) => b.to_string(),
        }
    }
}

/// `b` as a single-quoted literal that reads back to the same bytes.
pub(crate) fn quote_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('\'');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => out.push_str("\\'"),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\0' => out.push_str("\\0"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('\'');
    out
}

/// Whether `name` can be written without backticks.
pub(crate) fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && keyword(name).is_none()
}

/// A field name as it must be written.
pub(crate) fn quote_field(name: &str) -> String {
    if is_plain_identifier(name) {
        return name.to_owned();
    }
    let mut out = String::from("`");
    for c in name.chars() {
        match c {
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('`');
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kw {
    And,
    Or,
    Not,
    In,
    Is,
    Null,
    True,
    False,
    NaN,
    Inf,
}

fn keyword(word: &str) -> Option<Kw> {
    Some(match word.to_ascii_lowercase().as_str() {
        "and" => Kw::And,
        "or" => Kw::Or,
        "not" => Kw::Not,
        "in" => Kw::In,
        "is" => Kw::Is,
        "null" => Kw::Null,
        "true" => Kw::True,
        "false" => Kw::False,
        "nan" => Kw::NaN,
        "inf" | "infinity" => Kw::Inf,
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A bare word (identifier or keyword).
    Word(String),
    /// A backticked field name.
    Quoted(String),
    Str(Vec<u8>),
    /// Digits, with `integer` false when a fraction or exponent follows.
    Num(String, bool),
    Sign(char),
    Op(ConditionOp),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("'{w}'"),
            Tok::Quoted(w) => quote_field(w).to_string(),
            Tok::Str(b) => format!("the string {}", quote_bytes(b)),
            Tok::Num(t, _) => format!("the number {t}"),
            Tok::Sign(c) => format!("'{c}'"),
            Tok::Op(op) => format!("'{}'", op_text(*op)),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::End => "the end of the condition".into(),
        }
    }
}

/// The text of a comparison operator.
pub(crate) fn op_text(op: ConditionOp) -> &'static str {
    match op {
        ConditionOp::Lt => "<",
        ConditionOp::Le => "<=",
        ConditionOp::Gt => ">",
        ConditionOp::Ge => ">=",
        ConditionOp::Eq => "==",
        ConditionOp::Ne => "!=",
        ConditionOp::In => "in",
        ConditionOp::NotIn => "not in",
        ConditionOp::AlwaysTrue => "always true",
        ConditionOp::AlwaysFalse => "always false",
    }
}

/// An error at byte offset `pos` of `text`.
pub(crate) fn error_at(text: &str, pos: usize, message: impl Into<String>) -> Error {
    let column = text.get(..pos).map_or(pos, |s| s.chars().count()) + 1;
    Error::Condition { column: Some(column), message: message.into() }
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn err(&self, pos: usize, message: impl Into<String>) -> Error {
        error_at(self.text, pos, message)
    }

    fn peek_char(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn tokens(mut self) -> Result<Vec<(Tok, usize)>> {
        let mut out = Vec::new();
        loop {
            while self.peek_char().is_some_and(char::is_whitespace) {
                self.bump();
            }
            let start = self.pos;
            let Some(c) = self.bump() else {
                out.push((Tok::End, start));
                return Ok(out);
            };
            let tok = match c {
                '(' => Tok::LParen,
                ')' => Tok::RParen,
                '[' => Tok::LBracket,
                ']' => Tok::RBracket,
                ',' => Tok::Comma,
                '+' | '-' => Tok::Sign(c),
                '<' | '>' => {
                    let eq = self.peek_char() == Some('=');
                    if eq {
                        self.bump();
                    }
                    Tok::Op(match (c, eq) {
                        ('<', false) => ConditionOp::Lt,
                        ('<', true) => ConditionOp::Le,
                        ('>', false) => ConditionOp::Gt,
                        _ => ConditionOp::Ge,
                    })
                }
                '=' => {
                    if self.peek_char() == Some('=') {
                        self.bump();
                    }
                    Tok::Op(ConditionOp::Eq)
                }
                '!' => {
                    if self.peek_char() != Some('=') {
                        return Err(self.err(
                            start,
                            "expected '!=' ('!' alone is not an operator; use 'not')",
                        ));
                    }
                    self.bump();
                    Tok::Op(ConditionOp::Ne)
                }
                '\'' | '"' => Tok::Str(self.string(c, start)?),
                '`' => Tok::Quoted(self.quoted_field(start)?),
                c if c.is_ascii_digit() || c == '.' => self.number(start)?,
                c if c.is_alphabetic() || c == '_' => {
                    while self
                        .peek_char()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                    {
                        self.bump();
                    }
                    Tok::Word(self.text[start..self.pos].to_owned())
                }
                c => return Err(self.err(start, format!("unexpected character {c:?}"))),
            };
            out.push((tok, start));
        }
    }

    fn number(&mut self, start: usize) -> Result<Tok> {
        let bytes = self.text.as_bytes();
        let digits = |p: &mut usize| {
            let s = *p;
            while *p < bytes.len() && bytes[*p].is_ascii_digit() {
                *p += 1;
            }
            *p - s
        };
        let mut p = start;
        let mut integer = true;
        let int_digits = digits(&mut p);
        let mut frac_digits = 0;
        if p < bytes.len() && bytes[p] == b'.' {
            integer = false;
            p += 1;
            frac_digits = digits(&mut p);
        }
        if int_digits + frac_digits == 0 {
            return Err(self.err(start, "expected a digit"));
        }
        if p < bytes.len() && (bytes[p] == b'e' || bytes[p] == b'E') {
            let mut q = p + 1;
            if q < bytes.len() && (bytes[q] == b'+' || bytes[q] == b'-') {
                q += 1;
            }
            if digits(&mut q) == 0 {
                return Err(self.err(p, "expected the digits of an exponent"));
            }
            integer = false;
            p = q;
        }
        self.pos = p;
        if let Some(c) = self.peek_char().filter(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
        {
            return Err(self.err(self.pos, format!("unexpected {c:?} after a number")));
        }
        Ok(Tok::Num(self.text[start..p].to_owned(), integer))
    }

    fn string(&mut self, quote: char, start: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let at = self.pos;
            let Some(c) = self.bump() else {
                return Err(self.err(start, format!("unterminated string (no closing {quote})")));
            };
            match c {
                c if c == quote => return Ok(out),
                '\\' => self.escape(at, &mut out, false)?,
                c => {
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }

    fn quoted_field(&mut self, start: usize) -> Result<String> {
        let mut out = Vec::new();
        loop {
            let at = self.pos;
            let Some(c) = self.bump() else {
                return Err(self.err(start, "unterminated field name (no closing `)"));
            };
            match c {
                '`' => break,
                '\\' => self.escape(at, &mut out, true)?,
                c => {
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        if out.is_empty() {
            return Err(self.err(start, "empty field name"));
        }
        String::from_utf8(out).map_err(|_| self.err(start, "a field name must be UTF-8"))
    }

    /// Decodes the escape whose backslash is at `at` (already consumed).
    fn escape(&mut self, at: usize, out: &mut Vec<u8>, field: bool) -> Result<()> {
        let Some(c) = self.bump() else {
            return Err(self.err(at, "unterminated escape"));
        };
        match c {
            '\\' | '\'' | '"' | '`' => out.push(c as u8),
            'n' if !field => out.push(b'\n'),
            'r' if !field => out.push(b'\r'),
            't' if !field => out.push(b'\t'),
            '0' if !field => out.push(0),
            'x' if !field => {
                let hex = self
                    .text
                    .get(self.pos..self.pos + 2)
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                let Some(hex) = hex else {
                    return Err(self.err(at, "expected two hex digits after \\x"));
                };
                out.push(u8::from_str_radix(hex, 16).unwrap_or_default());
                self.pos += 2;
            }
            'u' if !field => {
                let rest = &self.text[self.pos..];
                let end = rest.find('}').filter(|_| rest.starts_with('{'));
                let ch = end
                    .and_then(|e| u32::from_str_radix(&rest[1..e], 16).ok())
                    .and_then(char::from_u32);
                let (Some(end), Some(ch)) = (end, ch) else {
                    return Err(self.err(at, "expected \\u{HEX} with a valid character code"));
                };
                let mut buf = [0; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                self.pos += end + 1;
            }
            c => {
                let valid = if field {
                    "\\` or \\\\"
                } else {
                    "\\\\ \\' \\\" \\n \\r \\t \\0 \\xHH \\u{HEX}"
                };
                return Err(self.err(at, format!("unknown escape '\\{c}' (valid: {valid})")));
            }
        }
        Ok(())
    }
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    i: usize,
    depth: usize,
}

/// Parses a condition into its syntax tree.
pub(crate) fn parse(text: &str) -> Result<Syntax> {
    let toks = Lexer { text, pos: 0 }.tokens()?;
    let mut p = Parser { text, toks, i: 0, depth: 0 };
    if p.peek() == &Tok::End {
        return Err(p.err(p.pos(), "empty condition"));
    }
    let s = p.or()?;
    if p.peek() != &Tok::End {
        let what = p.peek().describe();
        return Err(p.err(
            p.pos(),
            format!("expected 'and', 'or' or the end of the condition, found {what}"),
        ));
    }
    Ok(s)
}

impl Parser<'_> {
    fn err(&self, pos: usize, message: impl Into<String>) -> Error {
        error_at(self.text, pos, message)
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.i].0
    }

    fn pos(&self) -> usize {
        self.toks[self.i].1
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.toks[self.i].clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn kw(&self) -> Option<Kw> {
        match self.peek() {
            Tok::Word(w) => keyword(w),
            _ => None,
        }
    }

    fn eat_kw(&mut self, kw: Kw) -> bool {
        if self.kw() == Some(kw) {
            self.next();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Syntax> {
        let mut items = vec![self.and()?];
        while self.eat_kw(Kw::Or) {
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 { items.remove(0) } else { Syntax::Or(items) })
    }

    fn and(&mut self) -> Result<Syntax> {
        let mut items = vec![self.unary()?];
        while self.eat_kw(Kw::And) {
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 { items.remove(0) } else { Syntax::And(items) })
    }

    fn unary(&mut self) -> Result<Syntax> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(self.pos(), format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.depth += 1;
        let out = self.unary_inner();
        self.depth -= 1;
        out
    }

    fn unary_inner(&mut self) -> Result<Syntax> {
        if self.eat_kw(Kw::Not) {
            return Ok(Syntax::Not(Box::new(self.unary()?)));
        }
        if self.peek() == &Tok::LParen {
            let open = self.pos();
            self.next();
            let inner = self.or()?;
            if self.peek() != &Tok::RParen {
                let what = self.peek().describe();
                let at = self.pos();
                return Err(self.err(
                    at,
                    format!(
                        "expected ')' to close the '(' at column {}, found {what}",
                        column(self.text, open)
                    ),
                ));
            }
            self.next();
            return Ok(inner);
        }
        self.predicate()
    }

    /// A field name, if the next token is one.
    fn field(&mut self) -> Option<(String, usize)> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Quoted(name) => {
                self.next();
                Some((name, pos))
            }
            Tok::Word(w) if keyword(&w).is_none() => {
                self.next();
                Some((w, pos))
            }
            _ => None,
        }
    }

    fn starts_literal(&self) -> bool {
        matches!(self.peek(), Tok::Str(_) | Tok::Num(..) | Tok::Sign(_))
            || matches!(self.kw(), Some(Kw::True | Kw::False | Kw::NaN | Kw::Inf))
    }

    fn predicate(&mut self) -> Result<Syntax> {
        if self.starts_literal() {
            // `value op field`: the operator is mirrored.
            let value = self.literal()?;
            let (op, op_pos) = self.comparison_op("after the value")?;
            let Some((field, field_pos)) = self.field() else {
                let what = self.peek().describe();
                return Err(self.err(self.pos(), format!("expected a field name, found {what}")));
            };
            let op = match op {
                ConditionOp::Lt => ConditionOp::Gt,
                ConditionOp::Le => ConditionOp::Ge,
                ConditionOp::Gt => ConditionOp::Lt,
                ConditionOp::Ge => ConditionOp::Le,
                op => op,
            };
            return Ok(Syntax::Pred(Pred {
                field,
                field_pos,
                kind: PredKind::Cmp { op, op_pos, value },
            }));
        }
        let Some((field, field_pos)) = self.field() else {
            let what = self.peek().describe();
            return Err(
                self.err(self.pos(), format!("expected a field name, 'not' or '(', found {what}"))
            );
        };
        let kind = match self.kw() {
            Some(Kw::Is) => {
                self.next();
                let negated = self.eat_kw(Kw::Not);
                if !self.eat_kw(Kw::Null) {
                    let what = self.peek().describe();
                    let expected = if negated { "'null'" } else { "'null' or 'not null'" };
                    return Err(self
                        .err(self.pos(), format!("expected {expected} after 'is', found {what}")));
                }
                PredKind::Null { negated }
            }
            Some(Kw::In) => {
                self.next();
                PredKind::In { negated: false, values: self.list()? }
            }
            Some(Kw::Not) => {
                self.next();
                if !self.eat_kw(Kw::In) {
                    let what = self.peek().describe();
                    return Err(
                        self.err(self.pos(), format!("expected 'in' after 'not', found {what}"))
                    );
                }
                PredKind::In { negated: true, values: self.list()? }
            }
            _ => {
                let (op, op_pos) = self.comparison_op("after the field name")?;
                if self.kw() == Some(Kw::Null) {
                    let hint = if op == ConditionOp::Ne { "is not null" } else { "is null" };
                    return Err(self.err(self.pos(), format!("compare with null using '{hint}'")));
                }
                PredKind::Cmp { op, op_pos, value: self.literal()? }
            }
        };
        Ok(Syntax::Pred(Pred { field, field_pos, kind }))
    }

    fn comparison_op(&mut self, context: &str) -> Result<(ConditionOp, usize)> {
        match self.peek() {
            Tok::Op(op) => {
                let op = *op;
                let (_, pos) = self.next();
                Ok((op, pos))
            }
            t => {
                let what = t.describe();
                Err(self.err(
                    self.pos(),
                    format!(
                        "expected a comparison (<, <=, >, >=, =, ==, !=), 'in', 'not in' or 'is' \
                         {context}, found {what}"
                    ),
                ))
            }
        }
    }

    fn list(&mut self) -> Result<Vec<Lit>> {
        if self.peek() != &Tok::LBracket {
            let what = self.peek().describe();
            return Err(
                self.err(self.pos(), format!("expected '[' to start the list, found {what}"))
            );
        }
        self.next();
        let mut values = Vec::new();
        loop {
            if self.peek() == &Tok::RBracket {
                if values.is_empty() {
                    return Err(self.err(self.pos(), "a list needs at least one value"));
                }
                self.next();
                return Ok(values);
            }
            values.push(self.literal()?);
            match self.peek() {
                Tok::Comma => {
                    self.next();
                }
                Tok::RBracket => {}
                t => {
                    let what = t.describe();
                    return Err(self.err(
                        self.pos(),
                        format!("expected ',' or ']' in the list, found {what}"),
                    ));
                }
            }
        }
    }

    fn literal(&mut self) -> Result<Lit> {
        let pos = self.pos();
        let negative = match self.peek() {
            Tok::Sign(c) => {
                let neg = *c == '-';
                self.next();
                Some(neg)
            }
            _ => None,
        };
        let sign = if negative == Some(true) { "-" } else { "" };
        let kind = match (self.peek().clone(), self.kw()) {
            (Tok::Num(text, integer), _) => {
                self.next();
                LitKind::Num { text: format!("{sign}{text}"), integer }
            }
            (_, Some(Kw::NaN)) => {
                self.next();
                LitKind::Num { text: format!("{sign}NaN"), integer: false }
            }
            (_, Some(Kw::Inf)) => {
                self.next();
                LitKind::Num { text: format!("{sign}inf"), integer: false }
            }
            (Tok::Str(b), _) if negative.is_none() => {
                self.next();
                LitKind::Str(b)
            }
            (_, Some(kw @ (Kw::True | Kw::False))) if negative.is_none() => {
                self.next();
                LitKind::Bool(kw == Kw::True)
            }
            (t, _) => {
                let what = t.describe();
                let expected =
                    if negative.is_some() { "a number after the sign" } else { "a value" };
                return Err(self.err(self.pos(), format!("expected {expected}, found {what}")));
            }
        };
        Ok(Lit { kind, pos })
    }
}

/// The 1-based character column of byte offset `pos`.
fn column(text: &str, pos: usize) -> usize {
    text.get(..pos).map_or(pos, |s| s.chars().count()) + 1
}
