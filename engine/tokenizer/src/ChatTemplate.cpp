// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/tokenizer/ChatTemplate.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <cctype>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <variant>

namespace kvscope::tokenizer {

namespace {

[[noreturn]] void refuse(const std::string& what) {
    throw TokenizerError("chat template: " + what +
                         " (kvscope renders the Jinja subset chat templates use; give the prompt as plain text "
                         "instead of asking for the chat template)");
}

// ---- values ----------------------------------------------------------------------------------------------

struct Value;
using List = std::vector<Value>;
using Map = std::map<std::string, Value>;

struct Undefined {};
struct None {};

struct Value {
    std::variant<Undefined, None, bool, long long, std::string, std::shared_ptr<List>, std::shared_ptr<Map>> v;

    static Value list(List items) { return {std::make_shared<List>(std::move(items))}; }
    static Value map(Map items) { return {std::make_shared<Map>(std::move(items))}; }
    bool isUndefined() const { return std::holds_alternative<Undefined>(v); }
    bool isNone() const { return std::holds_alternative<None>(v); }
    const std::string* string() const { return std::get_if<std::string>(&v); }
    const long long* integer() const { return std::get_if<long long>(&v); }
    const List* asList() const {
        const auto* p = std::get_if<std::shared_ptr<List>>(&v);
        return p ? p->get() : nullptr;
    }
    const Map* asMap() const {
        const auto* p = std::get_if<std::shared_ptr<Map>>(&v);
        return p ? p->get() : nullptr;
    }
    bool truthy() const {
        if (const auto* b = std::get_if<bool>(&v)) {
            return *b;
        }
        if (const auto* i = integer()) {
            return *i != 0;
        }
        if (const auto* s = string()) {
            return !s->empty();
        }
        if (const auto* l = asList()) {
            return !l->empty();
        }
        if (const auto* m = asMap()) {
            return !m->empty();
        }
        return false;
    }
    std::string text() const {
        if (const auto* s = string()) {
            return *s;
        }
        if (const auto* i = integer()) {
            return std::to_string(*i);
        }
        if (const auto* b = std::get_if<bool>(&v)) {
            return *b ? "True" : "False";
        }
        if (isNone()) {
            return "None";
        }
        if (isUndefined()) {
            return "";
        }
        refuse("a list or mapping is printed");
    }
};

bool equal(const Value& a, const Value& b) {
    if (a.string() && b.string()) {
        return *a.string() == *b.string();
    }
    if (a.integer() && b.integer()) {
        return *a.integer() == *b.integer();
    }
    if (std::holds_alternative<bool>(a.v) && std::holds_alternative<bool>(b.v)) {
        return std::get<bool>(a.v) == std::get<bool>(b.v);
    }
    return (a.isNone() && b.isNone()) || (a.isUndefined() && b.isUndefined());
}

// ---- expressions -----------------------------------------------------------------------------------------

using Scope = std::map<std::string, Value>;

struct Expr {
    virtual ~Expr() = default;
    virtual Value eval(Scope& scope) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Literal : Expr {
    Value value;
    explicit Literal(Value v) : value(std::move(v)) {}
    Value eval(Scope&) const override { return value; }
};

struct Variable : Expr {
    std::string name;
    explicit Variable(std::string n) : name(std::move(n)) {}
    Value eval(Scope& scope) const override {
        auto it = scope.find(name);
        return it == scope.end() ? Value{Undefined{}} : it->second;
    }
};

Value item(const Value& container, const Value& key) {
    if (const Map* m = container.asMap()) {
        if (const std::string* k = key.string()) {
            auto it = m->find(*k);
            return it == m->end() ? Value{Undefined{}} : it->second;
        }
        return {Undefined{}};
    }
    if (const List* l = container.asList()) {
        if (const long long* i = key.integer()) {
            const long long index = *i < 0 ? *i + static_cast<long long>(l->size()) : *i;
            return index >= 0 && index < static_cast<long long>(l->size()) ? (*l)[static_cast<size_t>(index)]
                                                                           : Value{Undefined{}};
        }
    }
    if (const std::string* s = container.string()) {
        if (const long long* i = key.integer()) {
            const long long index = *i < 0 ? *i + static_cast<long long>(s->size()) : *i;
            return index >= 0 && index < static_cast<long long>(s->size())
                       ? Value{std::string(1, (*s)[static_cast<size_t>(index)])}
                       : Value{Undefined{}};
        }
    }
    if (container.isUndefined()) {
        refuse("an undefined value is indexed");
    }
    return {Undefined{}};
}

struct GetItem : Expr {
    ExprPtr container, key;
    Value eval(Scope& scope) const override { return item(container->eval(scope), key->eval(scope)); }
};

struct Slice : Expr {
    ExprPtr container, start, stop;
    Value eval(Scope& scope) const override {
        const Value whole = container->eval(scope);
        const List* l = whole.asList();
        if (l == nullptr) {
            refuse("a slice of something that is not a list");
        }
        const long long n = static_cast<long long>(l->size());
        const auto bound = [&](const ExprPtr& e, long long fallback) {
            if (!e) {
                return fallback;
            }
            const Value v = e->eval(scope);
            const long long* i = v.integer();
            if (!i) {
                refuse("a slice bound that is not an integer");
            }
            const long long b = *i < 0 ? *i + n : *i;
            return std::max(0LL, std::min(n, b));
        };
        const long long from = bound(start, 0);
        const long long to = bound(stop, n);
        List out;
        for (long long i = from; i < to; ++i) {
            out.push_back((*l)[static_cast<size_t>(i)]);
        }
        return Value::list(std::move(out));
    }
};

struct Unary : Expr {
    char op; // '!' not, '-' negate
    ExprPtr operand;
    Value eval(Scope& scope) const override {
        const Value v = operand->eval(scope);
        if (op == '!') {
            return {!v.truthy()};
        }
        const long long* i = v.integer();
        if (!i || *i == LLONG_MIN) {
            refuse("`-` on something that is not an integer");
        }
        return {-*i};
    }
};

struct Binary : Expr {
    std::string op;
    ExprPtr left, right;
    Value eval(Scope& scope) const override {
        if (op == "and") {
            const Value l = left->eval(scope);
            return l.truthy() ? right->eval(scope) : l;
        }
        if (op == "or") {
            const Value l = left->eval(scope);
            return l.truthy() ? l : right->eval(scope);
        }
        const Value l = left->eval(scope);
        const Value r = right->eval(scope);
        if (op == "==") {
            return {equal(l, r)};
        }
        if (op == "!=") {
            return {!equal(l, r)};
        }
        if (op == "~") {
            return {l.text() + r.text()};
        }
        if (op == "in" || op == "not in") {
            bool found = false;
            if (const std::string* s = r.string()) {
                const std::string* needle = l.string();
                if (!needle) {
                    refuse("`in` a string with something that is not a string");
                }
                found = s->find(*needle) != std::string::npos;
            } else if (const List* list = r.asList()) {
                for (const Value& element : *list) {
                    found = found || equal(element, l);
                }
            } else if (const Map* m = r.asMap()) {
                found = l.string() && m->count(*l.string());
            } else if (!r.isUndefined()) {
                refuse("`in` something that is neither a string, a list nor a mapping");
            }
            return {op == "in" ? found : !found};
        }
        if (op == "+" && l.string() && r.string()) {
            return {*l.string() + *r.string()};
        }
        if (op == "+" && l.asList() && r.asList()) {
            List joined = *l.asList();
            joined.insert(joined.end(), r.asList()->begin(), r.asList()->end());
            return Value::list(std::move(joined));
        }
        const long long* a = l.integer();
        const long long* b = r.integer();
        if (!a || !b) {
            refuse("`" + op + "` on values that are not both integers (or strings for `+`)");
        }
        long long result = 0;
        if ((op == "+" && __builtin_add_overflow(*a, *b, &result)) ||
            (op == "-" && __builtin_sub_overflow(*a, *b, &result)) ||
            (op == "*" && __builtin_mul_overflow(*a, *b, &result))) {
            refuse("an integer overflow in `" + op + "`");
        }
        if (op == "+" || op == "-" || op == "*") return {result};
        if ((op == "%" || op == "//") && *b == 0) {
            refuse("a division by zero");
        }
        if (*b == -1 && *a == LLONG_MIN) refuse("an integer overflow in `" + op + "`");
        // Python's floor division and modulo (the sign follows the divisor).
        const long long quotient = *a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)));
        if (op == "%") return {*a - quotient * *b};
        if (op == "//") return {quotient};
        if (op == "<") return {*a < *b};
        if (op == ">") return {*a > *b};
        if (op == "<=") return {*a <= *b};
        if (op == ">=") return {*a >= *b};
        refuse("operator `" + op + "`");
    }
};

struct Conditional : Expr {
    ExprPtr whenTrue, condition, whenFalse;
    Value eval(Scope& scope) const override {
        if (condition->eval(scope).truthy()) {
            return whenTrue->eval(scope);
        }
        return whenFalse ? whenFalse->eval(scope) : Value{Undefined{}};
    }
};

struct ListLiteral : Expr {
    std::vector<ExprPtr> items;
    Value eval(Scope& scope) const override {
        List out;
        for (const ExprPtr& e : items) {
            out.push_back(e->eval(scope));
        }
        return Value::list(std::move(out));
    }
};

std::string trimmed(const std::string& s, bool left, bool right) {
    size_t begin = 0;
    size_t end = s.size();
    while (left && begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) {
        ++begin;
    }
    while (right && end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) {
        --end;
    }
    return s.substr(begin, end - begin);
}

std::string cased(std::string s, bool upper) {
    for (char& c : s) {
        c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                    : std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

/// A filter (`x | trim`), a test (`x is defined`) or a method (`x.strip()`) applied to a value.
struct Apply : Expr {
    enum class Kind { Filter, Test, Method } kind;
    std::string name;
    bool negated = false;
    ExprPtr subject;
    std::vector<ExprPtr> arguments;

    static bool knownFilter(const std::string& n) {
        return n == "trim" || n == "upper" || n == "lower" || n == "length" || n == "string" || n == "first" ||
               n == "last";
    }
    static bool knownTest(const std::string& n) {
        return n == "defined" || n == "undefined" || n == "none" || n == "string" || n == "number" ||
               n == "true" || n == "false" || n == "iterable" || n == "mapping" || n == "sequence";
    }
    static bool knownMethod(const std::string& n) {
        return n == "strip" || n == "lstrip" || n == "rstrip" || n == "upper" || n == "lower" ||
               n == "startswith" || n == "endswith";
    }

    Value eval(Scope& scope) const override {
        const Value v = subject->eval(scope);
        if (kind == Kind::Test) {
            bool result = false;
            if (name == "defined") result = !v.isUndefined();
            if (name == "undefined") result = v.isUndefined();
            if (name == "none") result = v.isNone();
            if (name == "string") result = v.string() != nullptr;
            if (name == "number") result = v.integer() != nullptr;
            if (name == "true") result = std::holds_alternative<bool>(v.v) && std::get<bool>(v.v);
            if (name == "false") result = std::holds_alternative<bool>(v.v) && !std::get<bool>(v.v);
            if (name == "iterable" || name == "sequence") result = v.asList() || v.asMap() || v.string();
            if (name == "mapping") result = v.asMap() != nullptr;
            return {negated ? !result : result};
        }
        if (name == "length") {
            if (const List* l = v.asList()) return {static_cast<long long>(l->size())};
            if (const Map* m = v.asMap()) return {static_cast<long long>(m->size())};
            return {static_cast<long long>(v.text().size())};
        }
        if (name == "first" || name == "last") {
            const List* l = v.asList();
            if (!l) refuse("`" + name + "` of something that is not a list");
            return l->empty() ? Value{Undefined{}} : (name == "first" ? l->front() : l->back());
        }
        if (name == "string") return {v.text()};
        const std::string* s = v.string();
        if (s == nullptr) {
            refuse("`" + name + "` on something that is not a string");
        }
        if (name == "trim" || name == "strip") return {trimmed(*s, true, true)};
        if (name == "lstrip") return {trimmed(*s, true, false)};
        if (name == "rstrip") return {trimmed(*s, false, true)};
        if (name == "upper" || name == "lower") return {cased(*s, name == "upper")};
        if (arguments.size() != 1) refuse("`" + name + "` takes one argument");
        const Value a = arguments[0]->eval(scope);
        const std::string* affix = a.string();
        if (!affix) refuse("`" + name + "` of something that is not a string");
        if (name == "startswith") return {s->rfind(*affix, 0) == 0};
        return {s->size() >= affix->size() && s->compare(s->size() - affix->size(), affix->size(), *affix) == 0};
    }
};

struct RaiseException : Expr {
    ExprPtr message;
    Value eval(Scope& scope) const override {
        throw TokenizerError("the chat template refuses these messages: " + message->eval(scope).text());
    }
};

// ---- lexing the template into text and tags ----------------------------------------------------------------

struct TemplateSegment {
    enum class Kind { Text, Output, Statement } kind;
    std::string body;
    size_t offset;
};

std::vector<TemplateSegment> segments(const std::string& source) {
    std::vector<TemplateSegment> out;
    size_t position = 0;
    bool lineStarting = true;
    bool stripNext = false; // a `-` closing the previous tag
    while (position <= source.size()) {
        size_t open = source.find('{', position);
        while (open != std::string::npos && open + 1 < source.size() && source[open + 1] != '{' &&
               source[open + 1] != '%' && source[open + 1] != '#') {
            open = source.find('{', open + 1);
        }
        if (open == std::string::npos || open + 1 >= source.size()) {
            std::string text = source.substr(position);
            if (stripNext) text = trimmed(text, true, false);
            if (!text.empty()) out.push_back({TemplateSegment::Kind::Text, text, position});
            break;
        }
        std::string text = source.substr(position, open - position);
        if (stripNext) text = trimmed(text, true, false);
        const char kind = source[open + 1];
        const char sign = open + 2 < source.size() ? source[open + 2] : '\0';
        if (sign == '-') {
            text = trimmed(text, false, true);
        } else if (sign != '+' && kind != '{') {
            // lstrip_blocks: spaces and tabs between the line's start and a block tag go.
            const size_t lineStart = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
            if (lineStart > 0 || lineStarting) {
                if (text.find_first_not_of(" \t", lineStart) == std::string::npos) {
                    text.resize(lineStart);
                }
            }
        }
        if (!text.empty()) out.push_back({TemplateSegment::Kind::Text, text, position});
        const std::string close = kind == '{' ? "}}" : (kind == '%' ? "%}" : "#}");
        const size_t bodyStart = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
        const size_t end = source.find(close, bodyStart);
        if (end == std::string::npos) {
            refuse("a tag opened at offset " + std::to_string(open) + " is never closed");
        }
        size_t bodyEnd = end;
        stripNext = end > bodyStart && source[end - 1] == '-';
        if (stripNext) --bodyEnd;
        position = end + 2;
        if (kind != '{' && !stripNext && position < source.size() && source[position] == '\n') {
            ++position; // trim_blocks: the newline after a block tag goes
        }
        lineStarting = position > 0 && source[position - 1] == '\n';
        if (kind == '#') continue;
        out.push_back({kind == '{' ? TemplateSegment::Kind::Output : TemplateSegment::Kind::Statement,
                       source.substr(bodyStart, bodyEnd - bodyStart), open});
    }
    return out;
}

// ---- expression parsing ----------------------------------------------------------------------------------

struct Token {
    enum class Kind { Name, String, Integer, Operator, End } kind;
    std::string text;
};

std::vector<Token> tokens(const std::string& body) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < body.size()) {
        const char c = body[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t j = i;
            while (j < body.size() && (std::isalnum(static_cast<unsigned char>(body[j])) || body[j] == '_')) ++j;
            out.push_back({Token::Kind::Name, body.substr(i, j - i)});
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            size_t j = i;
            while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j]))) ++j;
            if (j < body.size() && body[j] == '.') refuse("a floating-point literal");
            if (j - i > 18) refuse("an integer literal of more than 18 digits");
            out.push_back({Token::Kind::Integer, body.substr(i, j - i)});
            i = j;
        } else if (c == '\'' || c == '"') {
            std::string value;
            size_t j = i + 1;
            for (; j < body.size() && body[j] != c; ++j) {
                if (body[j] == '\\' && j + 1 < body.size()) {
                    const char e = body[++j];
                    value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
                } else {
                    value += body[j];
                }
            }
            if (j >= body.size()) refuse("a string literal is never closed");
            out.push_back({Token::Kind::String, value});
            i = j + 1;
        } else {
            static const char* twoChar[] = {"==", "!=", "<=", ">=", "//"};
            std::string op(1, c);
            for (const char* t : twoChar) {
                if (body.compare(i, 2, t) == 0) op = t;
            }
            if (op.size() == 1 && std::string("+-*/%~<>()[].,:|=").find(c) == std::string::npos) {
                refuse(std::string("the character `") + c + "`");
            }
            out.push_back({Token::Kind::Operator, op});
            i += op.size();
        }
    }
    out.push_back({Token::Kind::End, ""});
    return out;
}

class ExpressionParser {
public:
    explicit ExpressionParser(const std::string& body) : m_tokens(tokens(body)) {}

    ExprPtr parseExpression() { return conditional(); }
    bool atEnd() const { return peek().kind == Token::Kind::End; }
    const Token& peek(size_t ahead = 0) const { return m_tokens[std::min(m_index + ahead, m_tokens.size() - 1)]; }
    bool acceptName(const std::string& name) {
        if (peek().kind == Token::Kind::Name && peek().text == name) {
            ++m_index;
            return true;
        }
        return false;
    }
    bool acceptOperator(const std::string& op) {
        if (peek().kind == Token::Kind::Operator && peek().text == op) {
            ++m_index;
            return true;
        }
        return false;
    }
    std::string name() {
        if (peek().kind != Token::Kind::Name) refuse("a name was expected, found `" + peek().text + "`");
        return m_tokens[m_index++].text;
    }
    void expectOperator(const std::string& op) {
        if (!acceptOperator(op)) refuse("`" + op + "` was expected, found `" + peek().text + "`");
    }

private:
    /// Nesting beyond any real template's is refused rather than recursed into (a hostile file's
    /// "((((..." must not exhaust the stack).
    struct Depth {
        explicit Depth(int& depth) : m_depth(++depth) {
            if (depth > 64) refuse("expressions nest deeper than 64");
        }
        ~Depth() { --m_depth; }
        int& m_depth;
    };

    ExprPtr conditional() {
        const Depth depth(m_depth);
        ExprPtr value = orExpression();
        if (acceptName("if")) {
            auto node = std::make_unique<Conditional>();
            node->whenTrue = std::move(value);
            node->condition = orExpression();
            if (acceptName("else")) node->whenFalse = conditional();
            return node;
        }
        return value;
    }
    ExprPtr binary(std::string op, ExprPtr left, ExprPtr right) {
        auto node = std::make_unique<Binary>();
        node->op = std::move(op);
        node->left = std::move(left);
        node->right = std::move(right);
        return node;
    }
    ExprPtr orExpression() {
        ExprPtr left = andExpression();
        while (acceptName("or")) left = binary("or", std::move(left), andExpression());
        return left;
    }
    ExprPtr andExpression() {
        ExprPtr left = notExpression();
        while (acceptName("and")) left = binary("and", std::move(left), notExpression());
        return left;
    }
    ExprPtr notExpression() {
        const Depth depth(m_depth);
        if (acceptName("not")) {
            auto node = std::make_unique<Unary>();
            node->op = '!';
            node->operand = notExpression();
            return node;
        }
        return comparison();
    }
    ExprPtr comparison() {
        ExprPtr left = concatenation();
        for (;;) {
            bool matched = false;
            for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
                if (acceptOperator(op)) {
                    left = binary(op, std::move(left), concatenation());
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (acceptName("in")) {
                left = binary("in", std::move(left), concatenation());
            } else if (peek().kind == Token::Kind::Name && peek().text == "not" && peek(1).text == "in") {
                m_index += 2;
                left = binary("not in", std::move(left), concatenation());
            } else if (acceptName("is")) {
                auto node = std::make_unique<Apply>();
                node->kind = Apply::Kind::Test;
                node->negated = acceptName("not");
                node->name = name();
                if (!Apply::knownTest(node->name)) refuse("the test `is " + node->name + "`");
                node->subject = std::move(left);
                left = std::move(node);
            } else {
                return left;
            }
        }
    }
    ExprPtr concatenation() {
        ExprPtr left = additive();
        while (acceptOperator("~")) left = binary("~", std::move(left), additive());
        return left;
    }
    ExprPtr additive() {
        ExprPtr left = multiplicative();
        for (;;) {
            if (acceptOperator("+")) left = binary("+", std::move(left), multiplicative());
            else if (acceptOperator("-")) left = binary("-", std::move(left), multiplicative());
            else return left;
        }
    }
    ExprPtr multiplicative() {
        ExprPtr left = unary();
        for (;;) {
            if (acceptOperator("*")) left = binary("*", std::move(left), unary());
            else if (acceptOperator("%")) left = binary("%", std::move(left), unary());
            else if (acceptOperator("//")) left = binary("//", std::move(left), unary());
            else if (peek().text == "/" && peek().kind == Token::Kind::Operator) refuse("division `/` (floats)");
            else return left;
        }
    }
    ExprPtr unary() {
        const Depth depth(m_depth);
        if (acceptOperator("-")) {
            auto node = std::make_unique<Unary>();
            node->op = '-';
            node->operand = unary();
            return node;
        }
        return postfix(primary());
    }
    ExprPtr postfix(ExprPtr value) {
        for (;;) {
            if (acceptOperator(".")) {
                const std::string member = name();
                if (acceptOperator("(")) {
                    if (!Apply::knownMethod(member)) refuse("the method `." + member + "()`");
                    auto node = std::make_unique<Apply>();
                    node->kind = Apply::Kind::Method;
                    node->name = member;
                    node->subject = std::move(value);
                    node->arguments = arguments();
                    value = std::move(node);
                } else {
                    auto node = std::make_unique<GetItem>();
                    node->container = std::move(value);
                    node->key = std::make_unique<Literal>(Value{member});
                    value = std::move(node);
                }
            } else if (acceptOperator("[")) {
                ExprPtr start;
                if (!(peek().kind == Token::Kind::Operator && peek().text == ":")) start = parseExpression();
                if (acceptOperator(":")) {
                    auto node = std::make_unique<Slice>();
                    node->container = std::move(value);
                    node->start = std::move(start);
                    if (!(peek().kind == Token::Kind::Operator && peek().text == "]")) {
                        if (peek().text == ":") refuse("a slice with a step");
                        node->stop = parseExpression();
                    }
                    if (peek().text == ":") refuse("a slice with a step");
                    value = std::move(node);
                } else {
                    auto node = std::make_unique<GetItem>();
                    node->container = std::move(value);
                    node->key = std::move(start);
                    value = std::move(node);
                }
                expectOperator("]");
            } else if (acceptOperator("|")) {
                auto node = std::make_unique<Apply>();
                node->kind = Apply::Kind::Filter;
                node->name = name();
                if (!Apply::knownFilter(node->name)) refuse("the filter `| " + node->name + "`");
                node->subject = std::move(value);
                if (acceptOperator("(")) node->arguments = arguments();
                value = std::move(node);
            } else {
                return value;
            }
        }
    }
    std::vector<ExprPtr> arguments() {
        std::vector<ExprPtr> out;
        if (acceptOperator(")")) return out;
        do {
            out.push_back(parseExpression());
        } while (acceptOperator(","));
        expectOperator(")");
        return out;
    }
    ExprPtr primary() {
        const Token token = peek();
        ++m_index;
        switch (token.kind) {
        case Token::Kind::String: {
            std::string value = token.text;
            while (peek().kind == Token::Kind::String) value += m_tokens[m_index++].text; // adjacent literals join
            return std::make_unique<Literal>(Value{value});
        }
        case Token::Kind::Integer: return std::make_unique<Literal>(Value{std::stoll(token.text)});
        case Token::Kind::Name:
            if (token.text == "true" || token.text == "True") return std::make_unique<Literal>(Value{true});
            if (token.text == "false" || token.text == "False") return std::make_unique<Literal>(Value{false});
            if (token.text == "none" || token.text == "None") return std::make_unique<Literal>(Value{None{}});
            if (token.text == "raise_exception") {
                expectOperator("(");
                auto node = std::make_unique<RaiseException>();
                node->message = parseExpression();
                expectOperator(")");
                return node;
            }
            if (peek().kind == Token::Kind::Operator && peek().text == "(") refuse("the function `" + token.text + "()`");
            return std::make_unique<Variable>(token.text);
        case Token::Kind::Operator:
            if (token.text == "(") {
                ExprPtr inner = parseExpression();
                expectOperator(")");
                return inner;
            }
            if (token.text == "[") {
                auto node = std::make_unique<ListLiteral>();
                if (!acceptOperator("]")) {
                    do {
                        node->items.push_back(parseExpression());
                    } while (acceptOperator(","));
                    expectOperator("]");
                }
                return node;
            }
            refuse("`" + token.text + "` where a value was expected");
        case Token::Kind::End: refuse("an expression ends early");
        }
        refuse("an expression");
    }

    std::vector<Token> m_tokens;
    size_t m_index = 0;
    int m_depth = 0;
};

ExprPtr expression(const std::string& body) {
    ExpressionParser parser(body);
    ExprPtr e = parser.parseExpression();
    if (!parser.atEnd()) refuse("`" + parser.peek().text + "` after the expression `" + body + "`");
    return e;
}

} // namespace

// ---- statements ------------------------------------------------------------------------------------------

struct ChatTemplate::Node {
    enum class Kind { Sequence, Text, Output, For, If, Set } kind = Kind::Sequence;
    std::string text;                                        // Text; the loop or set variable
    ExprPtr value;                                           // Output, For's iterable, Set's value
    std::vector<std::unique_ptr<Node>> children;             // Sequence; For's body
    std::vector<std::pair<ExprPtr, std::unique_ptr<Node>>> branches; // If (a null condition: else)

    void run(Scope& scope, std::string& out) const {
        switch (kind) {
        case Kind::Sequence:
            for (const auto& child : children) child->run(scope, out);
            return;
        case Kind::Text: out += text; return;
        case Kind::Output: out += value->eval(scope).text(); return;
        case Kind::Set: scope[text] = value->eval(scope); return;
        case Kind::If:
            for (const auto& [condition, body] : branches) {
                if (!condition || condition->eval(scope).truthy()) {
                    body->run(scope, out);
                    return;
                }
            }
            return;
        case Kind::For: {
            const Value iterable = value->eval(scope);
            const List* items = iterable.asList();
            if (items == nullptr) {
                if (iterable.isUndefined()) return;
                refuse("a for loop over something that is not a list");
            }
            const List copy = *items;
            const auto saved = scope.find("loop") != scope.end() ? std::optional(scope["loop"]) : std::nullopt;
            const auto savedVariable = scope.find(text) != scope.end() ? std::optional(scope[text]) : std::nullopt;
            const long long n = static_cast<long long>(copy.size());
            for (long long i = 0; i < n; ++i) {
                scope[text] = copy[static_cast<size_t>(i)];
                scope["loop"] = Value::map({{"index0", Value{i}}, {"index", Value{i + 1}}, {"first", Value{i == 0}},
                                            {"last", Value{i == n - 1}}, {"length", Value{n}},
                                            {"revindex", Value{n - i}}, {"revindex0", Value{n - i - 1}}});
                children.front()->run(scope, out);
            }
            if (saved) scope["loop"] = *saved; else scope.erase("loop");
            if (savedVariable) scope[text] = *savedVariable; else scope.erase(text);
            return;
        }
        }
    }
};

namespace {

using Node = std::unique_ptr<ChatTemplate::Node>;

std::string firstWord(const std::string& body, std::string& rest) {
    const std::string t = trimmed(body, true, true);
    size_t end = 0;
    while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_')) ++end;
    rest = t.substr(end);
    return t.substr(0, end);
}

} // namespace

namespace {

class StatementParser {
public:
    explicit StatementParser(std::vector<TemplateSegment> segments) : m_segments(std::move(segments)) {}

    /// Parses until one of `ends` (returned in `end`) or the template's end (only where `ends` is empty).
    Node sequence(const std::vector<std::string>& ends, std::string& end, std::string& endRest) {
        if (++m_depth > 64) refuse("blocks nest deeper than 64");
        struct Leave {
            int& depth;
            ~Leave() { --depth; }
        } leave{m_depth};
        auto node = std::make_unique<ChatTemplate::Node>();
        while (m_index < m_segments.size()) {
            const TemplateSegment& segment = m_segments[m_index++];
            if (segment.kind == TemplateSegment::Kind::Text) {
                auto text = std::make_unique<ChatTemplate::Node>();
                text->kind = ChatTemplate::Node::Kind::Text;
                text->text = segment.body;
                node->children.push_back(std::move(text));
                continue;
            }
            if (segment.kind == TemplateSegment::Kind::Output) {
                auto output = std::make_unique<ChatTemplate::Node>();
                output->kind = ChatTemplate::Node::Kind::Output;
                output->value = expression(segment.body);
                node->children.push_back(std::move(output));
                continue;
            }
            std::string rest;
            const std::string word = firstWord(segment.body, rest);
            for (const std::string& e : ends) {
                if (word == e) {
                    end = word;
                    endRest = rest;
                    return node;
                }
            }
            if (word == "for") {
                node->children.push_back(forLoop(rest));
            } else if (word == "if") {
                node->children.push_back(ifChain(rest));
            } else if (word == "set") {
                ExpressionParser parser(rest);
                auto set = std::make_unique<ChatTemplate::Node>();
                set->kind = ChatTemplate::Node::Kind::Set;
                set->text = parser.name();
                if (parser.acceptOperator(".")) refuse("`set` of an attribute (namespaces)");
                parser.expectOperator("=");
                set->value = parser.parseExpression();
                if (!parser.atEnd()) refuse("`" + parser.peek().text + "` after a `set`");
                node->children.push_back(std::move(set));
            } else {
                refuse("the statement `{% " + word + " %}`");
            }
        }
        if (!ends.empty()) {
            refuse("a block is never closed (expected `{% " + ends.back() + " %}`)");
        }
        return node;
    }

private:
    Node forLoop(const std::string& header) {
        ExpressionParser parser(header);
        auto loop = std::make_unique<ChatTemplate::Node>();
        loop->kind = ChatTemplate::Node::Kind::For;
        loop->text = parser.name();
        if (parser.acceptOperator(",")) refuse("a for loop over pairs");
        if (!parser.acceptName("in")) refuse("`in` was expected in a for loop");
        loop->value = parser.parseExpression();
        if (!parser.atEnd()) refuse("`" + parser.peek().text + "` in a for loop's header (filters are not read)");
        std::string end, rest;
        loop->children.push_back(sequence({"endfor", "else"}, end, rest));
        if (end == "else") refuse("a for loop's `else`");
        return loop;
    }
    Node ifChain(const std::string& condition) {
        auto chain = std::make_unique<ChatTemplate::Node>();
        chain->kind = ChatTemplate::Node::Kind::If;
        std::string test = condition;
        bool otherwise = false;
        for (;;) {
            std::string end, rest;
            ExprPtr parsed = otherwise ? nullptr : expression(test);
            Node body = sequence({"elif", "else", "endif"}, end, rest);
            chain->branches.emplace_back(std::move(parsed), std::move(body));
            if (end == "endif") return chain;
            if (otherwise) refuse("`" + end + "` after an `else`");
            otherwise = end == "else";
            test = rest;
        }
    }

    std::vector<TemplateSegment> m_segments;
    size_t m_index = 0;
    int m_depth = 0;
};

} // namespace

ChatTemplate::ChatTemplate(const std::string& source) {
    if (source.empty()) {
        throw TokenizerError("this model carries no chat template; give the prompt as plain text");
    }
    StatementParser parser(segments(source));
    std::string end, rest;
    m_root = parser.sequence({}, end, rest);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt,
                                 const std::string& bosToken, const std::string& eosToken) const {
    List list;
    for (const ChatMessage& message : messages) {
        list.push_back(Value::map({{"role", Value{message.role}}, {"content", Value{message.content}}}));
    }
    Scope scope = {{"messages", Value::list(std::move(list))},
                   {"add_generation_prompt", Value{addGenerationPrompt}},
                   {"bos_token", Value{bosToken}},
                   {"eos_token", Value{eosToken}}};
    std::string out;
    m_root->run(scope, out);
    return out;
}

} // namespace kvscope::tokenizer
