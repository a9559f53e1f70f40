"""Layering check: core runtime targets must not reach the layers built on them.

`ember_layering_test(name, targets, forbidden)` walks the `deps` of every target in `targets`
(an aspect, at analysis time) and collects every dependency edge it can reach. If any edge
ends in a package under one of `forbidden` (e.g. "//extension", "//kernels", "//delegates"),
analysis fails naming the edge and the core target it was reached from, so `bazel build //...`
and `bazel test //...` both fail on a back-arrow. Otherwise the test passes and writes one
gtest-style case per checked target (counted by test.sh).

Bazel 4.2.3 with this toolchain has no layering_check; the core targets also simply do not
depend on those layers, so an #include of one of their headers fails to compile in the sandbox.
"""

_EdgesInfo = provider(fields = ["edges"])

def _edges_aspect_impl(target, ctx):
    direct = []
    transitive = []
    for dep in getattr(ctx.rule.attr, "deps", []):
        direct.append((str(target.label), str(dep.label)))
        if _EdgesInfo in dep:
            transitive.append(dep[_EdgesInfo].edges)
    return [_EdgesInfo(edges = depset(direct, transitive = transitive))]

_edges_aspect = aspect(
    implementation = _edges_aspect_impl,
    attr_aspects = ["deps"],
)

def _package_of(label):
    return label.split(":")[0].lstrip("@")

def _layering_test_impl(ctx):
    violations = []
    for target in ctx.attr.targets:
        for (src, dst) in target[_EdgesInfo].edges.to_list():
            package = _package_of(dst)
            for prefix in ctx.attr.forbidden:
                if package == prefix or package.startswith(prefix + "/"):
                    violations.append("%s -> %s (reached from %s)" % (src, dst, target.label))
    if violations:
        fail("layering violation: a core runtime target depends on a layer above it:\n  " +
             "\n  ".join(sorted(violations)) +
             "\nThe core (//runtime/...) may not depend on " + ", ".join(ctx.attr.forbidden) +
             " (docs/architecture.md, \"Layers\").")
    cases = "".join([
        '<testcase name="%s" classname="Layering" status="run"/>' % str(t.label).replace("//", "").replace(":", ".").replace("/", ".")
        for t in ctx.attr.targets
    ])
    xml = '<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="Layering" tests="%d" failures="0">%s</testsuite></testsuites>' % (len(ctx.attr.targets), cases)
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        output = script,
        is_executable = True,
        content = "#!/bin/sh\n# %d core targets checked at analysis time: no dependency on %s.\n" % (len(ctx.attr.targets), ", ".join(ctx.attr.forbidden)) +
                  "if [ -n \"${XML_OUTPUT_FILE:-}\" ]; then\n  cat > \"$XML_OUTPUT_FILE\" <<'XML'\n" + xml + "\nXML\nfi\necho 'layering ok'\n",
    )
    return [DefaultInfo(executable = script)]

ember_layering_test = rule(
    implementation = _layering_test_impl,
    attrs = {
        "targets": attr.label_list(aspects = [_edges_aspect]),
        "forbidden": attr.string_list(),
    },
    test = True,
)
