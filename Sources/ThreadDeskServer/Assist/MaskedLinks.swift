/// Discord's masked links (`[label](url "title")`) read the way Discord reads them: a label may
/// hold brackets and an address parentheses, one level deep; no line break in either. A scanner,
/// not a regular expression: linear per round, and model text is long.
enum MaskedLinks {
    static let maxLabel = 500
    static let maxAddress = 2000
    static let maxTitle = 200

    /// `text` with every masked link shown as `label (url)` (or `url` when the label is empty or the
    /// address), again until none is left: a link in another's label is one once the inner is shown.
    /// Each round that finds one shortens the text, so it ends.
    static func shown(in text: String) -> String {
        var scalars = Array(text.unicodeScalars)
        var changed = false
        while true {
            var out: [Unicode.Scalar] = []
            out.reserveCapacity(scalars.count)
            var index = 0
            var found = false
            while index < scalars.count {
                if scalars[index] == "[", let link = link(in: scalars, at: index) {
                    let label = scalars[index + 1..<link.labelEnd]
                    let address = scalars[link.address]
                    if !label.isEmpty && !label.elementsEqual(address) {
                        out += label
                        out += [" ", "("]
                        out += address
                        out.append(")")
                    } else {
                        out += address
                    }
                    index = link.end
                    found = true
                } else {
                    out.append(scalars[index])
                    index += 1
                }
            }
            guard found else { break }
            (scalars, changed) = (out, true)
        }
        guard changed else { return text }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    /// The masked link that begins at `start` (a `[`): where its label ends (the `]`), its address,
    /// and the index after its `)`.
    static func link(in s: [Unicode.Scalar], at start: Int) -> (labelEnd: Int, address: Range<Int>, end: Int)? {
        // The label: anything but brackets and line breaks, or a bracketed run of the same.
        var index = start + 1
        while true {
            guard index < s.count, index - start <= maxLabel else { return nil }
            let scalar = s[index]
            if scalar == "]" { break }
            if scalar == "\n" { return nil }
            if scalar == "[" {
                index += 1
                while index < s.count, s[index] != "]" {
                    guard s[index] != "[", s[index] != "\n" else { return nil }
                    index += 1
                }
                guard index < s.count else { return nil }
            }
            index += 1
        }
        let labelEnd = index
        guard labelEnd + 1 < s.count, s[labelEnd + 1] == "(" else { return nil }
        index = skipSpaces(s, from: labelEnd + 2)
        if index < s.count, s[index] == "<" { index += 1 }
        // The address: no spaces or angle brackets; parentheses only as a pair.
        let addressStart = index
        while index < s.count, index - addressStart <= maxAddress {
            let scalar = s[index]
            if scalar.properties.isWhitespace || scalar == "<" || scalar == ">" || scalar == ")" { break }
            if scalar == "(" {
                index += 1
                while index < s.count, s[index] != ")" {
                    guard !isAddressStop(s[index]) else { return nil }
                    index += 1
                }
                guard index < s.count else { return nil }
            }
            index += 1
        }
        let address = addressStart..<index
        guard !address.isEmpty, address.count <= maxAddress else { return nil }
        if index < s.count, s[index] == ">" { index += 1 }
        // An optional title after a space, then the closing parenthesis.
        let afterAddress = skipSpaces(s, from: index)
        if afterAddress > index, afterAddress < s.count, s[afterAddress] == "\"" {
            var quote = afterAddress + 1
            while quote < s.count, s[quote] != "\"", s[quote] != "\n", quote - afterAddress <= maxTitle { quote += 1 }
            if quote < s.count, s[quote] == "\"" {
                let close = skipSpaces(s, from: quote + 1)
                if close < s.count, s[close] == ")" { return (labelEnd, address, close + 1) }
            }
        }
        guard afterAddress < s.count, s[afterAddress] == ")" else { return nil }
        return (labelEnd, address, afterAddress + 1)
    }

    private static func isAddressStop(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || scalar == "(" || scalar == "<" || scalar == ">"
    }

    private static func skipSpaces(_ s: [Unicode.Scalar], from start: Int) -> Int {
        var index = start
        while index < s.count, s[index].properties.isWhitespace { index += 1 }
        return index
    }
}
