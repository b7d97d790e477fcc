//! The display filter: Wireshark field names plus short aliases.
//!
//! `bth.psn >= 100 && bth.destqp == 0x12 && rocescope.retransmission`
//!
//! Grammar: `expr := and (("||" | "or") and)*`, `and := not (("&&" |
//! "and") not)*`, `not := ("!" | "not") not | "(" expr ")" | field [op
//! value]`, ops `== != < <= > >=` (or `eq ne lt le gt ge`), values decimal
//! or `0x` hex integers, `true`/`false`, IPv4/IPv6 addresses. A field on its
//! own is true when the packet has it (a header, a set flag, a non-zero
//! value). Fields the index holds (flags, PSN, opcode, lengths, QP) are
//! answered without reading the packet; the others decode it.

use std::net::IpAddr;

/// A parse error with the byte position in the filter text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter error at column {}: {problem}", column + 1)]
pub struct FilterError {
    pub column: usize,
    pub problem: FilterProblem,
}

/// What is wrong at the error's column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterProblem {
    /// The text does not follow the grammar (the parser's words).
    #[error("{0}")]
    Syntax(String),
    /// A field name that names nothing rocescope can test.
    #[error("{0}")]
    Field(FieldError),
    #[error("filter longer than {max_chars} characters")]
    TooLong { max_chars: usize },
}

/// Why a field name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("'{proto}' is a protocol: use it alone, without a comparison")]
    ProtocolCompared { proto: &'static str },
    #[error("'{proto}' has no test")]
    NoTest { proto: &'static str },
    #[error("rocescope does not decode {proto}'s fields; '{proto}' alone matches its frames")]
    Undecoded { proto: &'static str },
    /// Not a field name; `near` is the known name closest to it.
    #[error("unknown field '{name}'; did you mean '{near}'?")]
    UnknownNear { name: String, near: String },
    #[error(
        "unknown field '{name}' (fields are Wireshark's, e.g. ip.src, bth.psn, \
         reth.dmalen, or rocescope's: retransmission, nak, cnp; see decoders/FIELDS.md)"
    )]
    Unknown { name: String },
}

/// A value a field compares to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    Addr(IpAddr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Fields answered from the index row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowField {
    Psn,
    Opcode,
    DestQp,
    FrameLen,
    CapLen,
    FrameNumber,
    Port,
    /// A row flag, by bit.
    Flag(u16),
    /// The QP conversation id of the analysis/store.
    Conversation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Row(RowField),
    /// A packet field by its Wireshark name (or a header name such as
    /// `infiniband.reth` for presence).
    Packet(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Has(Field),
    Cmp(Field, Op, Value),
}

/// A compiled filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub expr: Expr,
    pub text: String,
}

/// Short names and their Wireshark (or rocescope) field.
const ALIASES: &[(&str, &str)] = &[
    ("psn", "infiniband.bth.psn"),
    ("qp", "infiniband.bth.destqp"),
    ("destqp", "infiniband.bth.destqp"),
    ("opcode", "infiniband.bth.opcode"),
    ("ackreq", "infiniband.bth.a"),
    ("syndrome", "infiniband.aeth.syndrome"),
    ("msn", "infiniband.aeth.msn"),
    ("dmalen", "infiniband.reth.dmalen"),
    ("rkey", "infiniband.reth.r_key"),
    ("va", "infiniband.reth.va"),
    ("retransmission", "rocescope.retransmission"),
    ("duplicate", "rocescope.duplicate"),
    ("oos", "rocescope.out_of_sequence"),
    ("out_of_sequence", "rocescope.out_of_sequence"),
    ("nak", "rocescope.nak"),
    ("cnp", "rocescope.cnp"),
    ("ce", "rocescope.ecn_ce"),
    ("icrc_bad", "rocescope.icrc_bad"),
    ("cut", "rocescope.cut"),
    ("capture_loss", "rocescope.capture_loss"),
    ("infiniband", "infiniband.bth"),
];

/// Full name of a field written with or without the `infiniband.` prefix
/// or as an alias.
fn canonical(name: &str) -> String {
    if let Some((_, full)) = ALIASES.iter().find(|(a, _)| *a == name) {
        return (*full).to_owned();
    }
    for layer in [
        "bth.",
        "reth.",
        "aeth.",
        "deth.",
        "grh.",
        "atomiceth.",
        "atomicacketh.",
        "rdeth.",
        "xrceth.",
        "feth.",
        "cnp.",
    ] {
        if name.starts_with(layer) {
            return format!("infiniband.{name}");
        }
    }
    name.to_owned()
}

/// Row fields by their full name.
fn row_field(full: &str) -> Option<RowField> {
    Some(match full {
        "infiniband.bth.psn" => RowField::Psn,
        "infiniband.bth.opcode" => RowField::Opcode,
        "infiniband.bth.destqp" => RowField::DestQp,
        "frame.len" => RowField::FrameLen,
        "frame.cap_len" => RowField::CapLen,
        "frame.number" => RowField::FrameNumber,
        "frame.interface_id" | "rocescope.port" => RowField::Port,
        "rocescope.conversation" => RowField::Conversation,
        "roce" | "rocescope.roce" => RowField::Flag(0),
        "rocescope.icrc_bad" => RowField::Flag(1),
        "rocescope.cut" => RowField::Flag(2),
        "rocescope.malformed" => RowField::Flag(3),
        "rocescope.ecn_ce" => RowField::Flag(5),
        "infiniband.bth.becn" | "rocescope.becn" => RowField::Flag(6),
        "infiniband.bth.fecn" | "rocescope.fecn" => RowField::Flag(7),
        "rocescope.nak" => RowField::Flag(8),
        "rocescope.cnp" => RowField::Flag(9),
        "rocescope.retransmission" => RowField::Flag(10),
        "rocescope.duplicate" => RowField::Flag(11),
        "rocescope.out_of_sequence" => RowField::Flag(12),
        "rocescope.capture_loss" => RowField::Flag(13),
        _ => return None,
    })
}

/// The row fields' names, for suggestions (`row_field` answers them).
const ROW_NAMES: &[&str] = &[
    "frame.len",
    "frame.cap_len",
    "frame.number",
    "frame.interface_id",
    "roce",
    "rocescope.port",
    "rocescope.conversation",
    "rocescope.roce",
    "rocescope.icrc_bad",
    "rocescope.cut",
    "rocescope.malformed",
    "rocescope.ecn_ce",
    "rocescope.becn",
    "rocescope.fecn",
    "rocescope.nak",
    "rocescope.cnp",
    "rocescope.retransmission",
    "rocescope.duplicate",
    "rocescope.out_of_sequence",
    "rocescope.capture_loss",
];

/// Wireshark's names for "either end": true when the source or the
/// destination matches.
const EITHER_END: &[(&str, [&str; 2])] = &[
    ("eth.addr", ["eth.src", "eth.dst"]),
    ("ip.addr", ["ip.src", "ip.dst"]),
    ("ipv6.addr", ["ipv6.src", "ipv6.dst"]),
    ("udp.port", ["udp.srcport", "udp.dstport"]),
];

/// Protocols rocescope recognises but does not dissect: a frame has one
/// when its IP protocol or EtherType says so.
const UNDISSECTED: &[(&str, &[(&str, u64)])] = &[
    ("tcp", &[("ip.proto", 6), ("ipv6.nxt", 6)]),
    ("icmp", &[("ip.proto", 1)]),
    ("icmpv6", &[("ipv6.nxt", 58)]),
    ("arp", &[("eth.type", 0x0806), ("vlan.etype", 0x0806)]),
];

/// The expression a field name (and its comparison, if any) stands for, or
/// why the name is refused. Unknown names are refused rather than matching
/// nothing, which would show an empty list with no reason.
fn term(name: &str, cmp: Option<(Op, Value)>) -> Result<Expr, FieldError> {
    let full = canonical(name);
    let leaf = |field: Field| match &cmp {
        Some((op, v)) => Expr::Cmp(field, *op, v.clone()),
        None => Expr::Has(field),
    };
    if let Some(row) = row_field(&full) {
        return Ok(leaf(Field::Row(row)));
    }
    if rocescope_decoders::FIELD_NAMES
        .binary_search(&full.as_str())
        .is_ok()
    {
        return Ok(leaf(Field::Packet(full)));
    }
    if let Some((_, [a, b])) = EITHER_END.iter().find(|(n, _)| *n == full) {
        return Ok(Expr::Or(
            Box::new(leaf(Field::Packet((*a).to_owned()))),
            Box::new(leaf(Field::Packet((*b).to_owned()))),
        ));
    }
    if let Some((proto, tests)) = UNDISSECTED.iter().find(|(n, _)| *n == full) {
        if cmp.is_some() {
            return Err(FieldError::ProtocolCompared { proto });
        }
        let mut alts = tests.iter().map(|(field, value)| {
            Expr::Cmp(
                Field::Packet((*field).to_owned()),
                Op::Eq,
                Value::Int(*value),
            )
        });
        let first = alts.next().ok_or(FieldError::NoTest { proto })?;
        return Ok(alts.fold(first, |e, alt| Expr::Or(Box::new(e), Box::new(alt))));
    }
    if let Some((proto, _)) = UNDISSECTED.iter().find(|(p, _)| {
        full.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with('.'))
    }) {
        return Err(FieldError::Undecoded { proto });
    }
    let name = name.to_owned();
    Err(match nearest_name(&name) {
        Some(near) => FieldError::UnknownNear { name, near },
        None => FieldError::Unknown { name },
    })
}

/// The known name nearest to `name` by edit distance, written the way the
/// user wrote theirs (with or without `infiniband.`), when it is close.
fn nearest_name(name: &str) -> Option<String> {
    let short = |full: &str| full.strip_prefix("infiniband.").map(str::to_owned);
    let mut candidates: Vec<String> = Vec::new();
    for full in rocescope_decoders::FIELD_NAMES.iter().chain(ROW_NAMES) {
        candidates.push((*full).to_owned());
        candidates.extend(short(full));
    }
    candidates.extend(ALIASES.iter().map(|(a, _)| (*a).to_owned()));
    candidates.extend(EITHER_END.iter().map(|(n, _)| (*n).to_owned()));
    candidates.extend(UNDISSECTED.iter().map(|(n, _)| (*n).to_owned()));
    let (dist, best) = candidates
        .into_iter()
        .map(|c| (edit_distance(name, &c), c))
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.len().cmp(&b.1.len())))?;
    // Close enough to be a typo: a quarter of the name, at least one edit.
    (dist <= (name.len() / 4).max(1)).then_some(best)
}

/// Levenshtein distance over bytes (names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.bytes().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(u64),
    Addr(IpAddr),
    Op(Op),
    And,
    Or,
    Not,
    LParen,
    RParen,
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, FilterError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |column, m: &str| FilterError {
        column,
        problem: FilterProblem::Syntax(m.to_owned()),
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' => i += 1,
            b'(' => {
                out.push((i, Tok::LParen));
                i += 1;
            }
            b')' => {
                out.push((i, Tok::RParen));
                i += 1;
            }
            b'&' | b'|' => {
                if b.get(i + 1) != Some(&c) {
                    return Err(err(i, &format!("expected '{0}{0}'", c as char)));
                }
                out.push((i, if c == b'&' { Tok::And } else { Tok::Or }));
                i += 2;
            }
            b'!' | b'=' | b'<' | b'>' => {
                let two = b.get(i + 1) == Some(&b'=');
                let tok = match (c, two) {
                    (b'!', true) => Tok::Op(Op::Ne),
                    (b'!', false) => Tok::Not,
                    (b'=', true) => Tok::Op(Op::Eq),
                    (b'=', false) => return Err(err(i, "use '==' to compare")),
                    (b'<', true) => Tok::Op(Op::Le),
                    (b'<', false) => Tok::Op(Op::Lt),
                    (b'>', true) => Tok::Op(Op::Ge),
                    _ => Tok::Op(Op::Gt),
                };
                out.push((i, tok));
                i += if two { 2 } else { 1 };
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b':' => {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b':'))
                {
                    i += 1;
                }
                let word = &text[start..i];
                let tok = if let Some(hex) =
                    word.strip_prefix("0x").or_else(|| word.strip_prefix("0X"))
                {
                    Tok::Num(
                        u64::from_str_radix(hex, 16)
                            .map_err(|_| err(start, &format!("bad hex number '{word}'")))?,
                    )
                } else if word.bytes().all(|d| d.is_ascii_digit()) {
                    Tok::Num(
                        word.parse()
                            .map_err(|_| err(start, &format!("number '{word}' is too large")))?,
                    )
                } else if let Ok(a) = word.parse::<IpAddr>() {
                    Tok::Addr(a)
                } else {
                    match word {
                        "and" => Tok::And,
                        "or" => Tok::Or,
                        "not" => Tok::Not,
                        "eq" => Tok::Op(Op::Eq),
                        "ne" => Tok::Op(Op::Ne),
                        "lt" => Tok::Op(Op::Lt),
                        "le" => Tok::Op(Op::Le),
                        "gt" => Tok::Op(Op::Gt),
                        "ge" => Tok::Op(Op::Ge),
                        "true" => Tok::Num(1),
                        "false" => Tok::Num(0),
                        _ if word.as_bytes()[0].is_ascii_digit() => {
                            return Err(err(
                                start,
                                &format!("'{word}' is neither a number nor an address"),
                            ));
                        }
                        _ => Tok::Ident(word.to_owned()),
                    }
                };
                out.push((start, tok));
            }
            _ => {
                return Err(err(
                    i,
                    &format!(
                        "unexpected character '{}'",
                        text[i..].chars().next().unwrap_or('?')
                    ),
                ));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }
    fn column(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(c, _)| *c)
    }
    fn err(&self, m: impl Into<String>) -> FilterError {
        FilterError {
            column: self.column(),
            problem: FilterProblem::Syntax(m.into()),
        }
    }
    fn or(&mut self, depth: usize) -> Result<Expr, FilterError> {
        if depth > 64 {
            return Err(self.err("expression nested too deeply"));
        }
        let mut e = self.and(depth)?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and(depth)?));
        }
        Ok(e)
    }
    fn and(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut e = self.not(depth)?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            e = Expr::And(Box::new(e), Box::new(self.not(depth)?));
        }
        Ok(e)
    }
    fn not(&mut self, depth: usize) -> Result<Expr, FilterError> {
        match self.peek().cloned() {
            Some(Tok::Not) => {
                self.pos += 1;
                if depth > 64 {
                    return Err(self.err("expression nested too deeply"));
                }
                Ok(Expr::Not(Box::new(self.not(depth + 1)?)))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let e = self.or(depth + 1)?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(self.err("missing ')'"));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                let column = self.column();
                self.pos += 1;
                let cmp = if let Some(Tok::Op(op)) = self.peek().cloned() {
                    self.pos += 1;
                    let v = match self.peek().cloned() {
                        Some(Tok::Num(n)) => Value::Int(n),
                        Some(Tok::Addr(a)) => Value::Addr(a),
                        _ => return Err(self.err("expected a number or an address")),
                    };
                    self.pos += 1;
                    Some((op, v))
                } else {
                    None
                };
                term(&name, cmp).map_err(|e| FilterError {
                    column,
                    problem: FilterProblem::Field(e),
                })
            }
            Some(_) => Err(self.err("expected a field name, '!' or '('")),
            None => Err(self.err("the filter ends too early")),
        }
    }
}

/// The longest filter text taken (bytes).
const MAX_FILTER_CHARS: usize = 4096;

impl Filter {
    /// Compile a filter; an empty text is `None` (everything passes).
    pub fn parse(text: &str) -> Result<Option<Filter>, FilterError> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        if text.len() > MAX_FILTER_CHARS {
            return Err(FilterError {
                column: MAX_FILTER_CHARS,
                problem: FilterProblem::TooLong {
                    max_chars: MAX_FILTER_CHARS,
                },
            });
        }
        let toks = lex(text)?;
        let mut p = Parser {
            toks,
            pos: 0,
            end: text.len(),
        };
        let expr = p.or(0)?;
        if p.pos < p.toks.len() {
            return Err(p.err("expected '&&', '||' or the end"));
        }
        Ok(Some(Filter {
            expr,
            text: text.to_owned(),
        }))
    }

    /// Whether evaluating needs the decoded packet (not just the index row).
    pub fn needs_packet(&self) -> bool {
        fn walk(e: &Expr) -> bool {
            match e {
                Expr::And(a, b) | Expr::Or(a, b) => walk(a) || walk(b),
                Expr::Not(a) => walk(a),
                Expr::Has(f) | Expr::Cmp(f, _, _) => matches!(f, Field::Packet(_)),
            }
        }
        walk(&self.expr)
    }

    /// Evaluate against one packet.
    pub fn eval(&self, ctx: &dyn FieldLookup) -> bool {
        eval(&self.expr, ctx)
    }
}

/// Where a filter finds field values.
pub trait FieldLookup {
    fn row(&self, f: RowField) -> Option<u64>;
    /// Every value of a packet field (fields may repeat), or none if absent.
    fn packet(&self, name: &str) -> Vec<Value>;
}

fn cmp(a: &Value, op: Op, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Addr(x), Value::Addr(y)) => x.cmp(y),
        _ => return op == Op::Ne,
    };
    match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
    }
}

fn eval(e: &Expr, ctx: &dyn FieldLookup) -> bool {
    match e {
        Expr::And(a, b) => eval(a, ctx) && eval(b, ctx),
        Expr::Or(a, b) => eval(a, ctx) || eval(b, ctx),
        Expr::Not(a) => !eval(a, ctx),
        Expr::Has(Field::Row(f)) => ctx.row(*f).is_some_and(|v| v != 0),
        Expr::Has(Field::Packet(name)) => {
            let vals = ctx.packet(name);
            !vals.is_empty() && vals.iter().any(|v| *v != Value::Int(0))
        }
        Expr::Cmp(Field::Row(f), op, v) => ctx.row(*f).is_some_and(|x| cmp(&Value::Int(x), *op, v)),
        // Like Wireshark: true if any occurrence matches.
        Expr::Cmp(Field::Packet(name), op, v) => ctx.packet(name).iter().any(|x| cmp(x, *op, v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx {
        psn: u64,
        flags: u16,
        ip_src: IpAddr,
    }

    impl FieldLookup for Ctx {
        fn row(&self, f: RowField) -> Option<u64> {
            match f {
                RowField::Psn => Some(self.psn),
                RowField::DestQp => Some(0x12),
                RowField::Flag(bit) => Some(u64::from(self.flags >> bit & 1)),
                _ => None,
            }
        }
        fn packet(&self, name: &str) -> Vec<Value> {
            match name {
                "ip.src" => vec![Value::Addr(self.ip_src)],
                "infiniband.reth" => vec![Value::Int(1)],
                _ => vec![],
            }
        }
    }

    fn ctx(psn: u64, flags: u16) -> Ctx {
        Ctx {
            psn,
            flags,
            ip_src: "10.0.0.1".parse().unwrap(),
        }
    }

    #[test]
    fn the_issue_example() {
        let f = Filter::parse("bth.psn >= 100 && bth.destqp == 0x12 && rocescope.retransmission")
            .unwrap()
            .unwrap();
        assert!(!f.needs_packet());
        assert!(f.eval(&ctx(100, 1 << 10)));
        assert!(!f.eval(&ctx(99, 1 << 10)));
        assert!(!f.eval(&ctx(100, 0)));
    }

    #[test]
    fn aliases_words_parens_and_packet_fields() {
        let f = Filter::parse("(psn < 10 or not retransmission) and ip.src == 10.0.0.1")
            .unwrap()
            .unwrap();
        assert!(f.needs_packet());
        assert!(f.eval(&ctx(5, 1 << 10)));
        assert!(f.eval(&ctx(50, 0)));
        assert!(!f.eval(&ctx(50, 1 << 10)));
        let g = Filter::parse("infiniband.reth && !infiniband.aeth")
            .unwrap()
            .unwrap();
        assert!(g.eval(&ctx(0, 0)));
        assert_eq!(Filter::parse("   ").unwrap(), None);
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = Filter::parse("psn >= && qp").unwrap_err();
        assert_eq!(e.column, 7);
        assert_eq!(
            e.to_string(),
            "filter error at column 8: expected a number or an address"
        );
        assert_eq!(Filter::parse("psn = 3").unwrap_err().column, 4);
        assert_eq!(
            Filter::parse("(psn > 3").unwrap_err().problem,
            FilterProblem::Syntax("missing ')'".into())
        );
        assert_eq!(Filter::parse("psn > 3 qp").unwrap_err().column, 8);
        assert!(Filter::parse("psn > 0xZZ").is_err());
        assert!(Filter::parse("psn @ 3").is_err());
        assert!(Filter::parse(&"(".repeat(200)).is_err());
        assert!(Filter::parse(&"!".repeat(5000)).is_err());
    }

    /// Unknown names are refused with the nearest known one, where the
    /// filter used to match nothing and show an empty list with no reason.
    #[test]
    fn unknown_fields_are_refused_with_the_nearest() {
        let e = Filter::parse("bth.pssn == 3").unwrap_err();
        assert_eq!(e.column, 0);
        assert_eq!(
            e.problem,
            FilterProblem::Field(FieldError::UnknownNear {
                name: "bth.pssn".into(),
                near: "bth.psn".into()
            })
        );
        assert!(
            e.to_string()
                .ends_with("unknown field 'bth.pssn'; did you mean 'bth.psn'?")
        );
        let e = Filter::parse("psn > 3 && retransmision").unwrap_err();
        assert_eq!(e.column, 11);
        assert!(
            e.to_string().contains("did you mean 'retransmission'?"),
            "{e}"
        );
        let e = Filter::parse("infiniband.reth.dmalenn > 0").unwrap_err();
        assert!(e.to_string().contains("'infiniband.reth.dmalen'"), "{e}");
        let e = Filter::parse("foo.bar == 1").unwrap_err();
        assert!(
            matches!(&e.problem, FilterProblem::Field(FieldError::Unknown { name }) if name == "foo.bar"),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains(": unknown field 'foo.bar' (fields are"),
            "{e}"
        );
        let e = Filter::parse("tcp.port == 80").unwrap_err();
        assert_eq!(
            e.problem,
            FilterProblem::Field(FieldError::Undecoded { proto: "tcp" })
        );
        assert!(
            e.to_string().contains("does not decode tcp's fields"),
            "{e}"
        );
        assert_eq!(
            Filter::parse("tcp == 1").unwrap_err().problem,
            FilterProblem::Field(FieldError::ProtocolCompared { proto: "tcp" })
        );
        // Every name the field walk emits, short or long, and every alias parses.
        for name in rocescope_decoders::FIELD_NAMES.iter().chain(ROW_NAMES) {
            assert!(Filter::parse(name).is_ok(), "{name}");
        }
        for (alias, _) in ALIASES {
            assert!(Filter::parse(alias).is_ok(), "{alias}");
        }
    }

    /// Wireshark's either-end names and the protocols rocescope only
    /// recognises.
    #[test]
    fn either_end_names_and_undissected_protocols() {
        struct Tcp;
        impl FieldLookup for Tcp {
            fn row(&self, _: RowField) -> Option<u64> {
                None
            }
            fn packet(&self, name: &str) -> Vec<Value> {
                match name {
                    "ip.proto" => vec![Value::Int(6)],
                    "ip.dst" => vec![Value::Addr("10.0.0.9".parse().unwrap())],
                    "ip.src" => vec![Value::Addr("10.0.0.1".parse().unwrap())],
                    _ => vec![],
                }
            }
        }
        let yes = |f: &str| Filter::parse(f).unwrap().unwrap().eval(&Tcp);
        assert!(yes("tcp"));
        assert!(!yes("icmp"));
        assert!(!yes("arp"));
        assert!(yes("ip.addr == 10.0.0.9"));
        assert!(yes("ip.addr == 10.0.0.1"));
        assert!(!yes("ip.addr == 10.0.0.2"));
        assert!(!yes("udp.port == 4791"));
    }
}
