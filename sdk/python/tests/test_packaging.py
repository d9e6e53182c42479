"""The Python SDK stays what its users were promised: Python 3.9 syntax, the standard library only, no
dependencies in pyproject.toml, type hints on every function."""
import ast
import pathlib
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "linekeeper"
STDLIB = {"__future__", "dataclasses", "http", "json", "math", "os", "queue", "re", "socket", "threading", "time", "types", "typing", "urllib"}


class PackagingTest(unittest.TestCase):
    def modules(self) -> list:
        found = sorted(PACKAGE.glob("*.py"))
        self.assertGreater(len(found), 4)
        return [(p, ast.parse(p.read_text(encoding="utf-8"), filename=str(p), feature_version=(3, 9))) for p in found]

    def test_python_3_9_syntax_and_only_the_standard_library(self) -> None:
        for path, tree in self.modules():
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name.split(".")[0] for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [(node.module or "").split(".")[0]]
                else:
                    continue
                for n in names:
                    self.assertIn(n, STDLIB, f"{path.name} imports {n}")

    def test_every_function_is_annotated(self) -> None:
        for path, tree in self.modules():
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                args = [a for a in node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
                missing = [a.arg for a in args if a.annotation is None]
                self.assertEqual(missing, [], f"{path.name}:{node.lineno} {node.name}: parameters without a type")
                self.assertIsNotNone(node.returns, f"{path.name}:{node.lineno} {node.name}: no return type")

    def test_pyproject_declares_no_dependency_and_python_3_9(self) -> None:
        text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        self.assertIn("dependencies = []", text)
        self.assertIn('requires-python = ">=3.9"', text)
        self.assertTrue((PACKAGE / "py.typed").exists())


if __name__ == "__main__":
    unittest.main()
