"""The jar sets match the Spark they are loaded into."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark

from platform_pipelines.jvm import JVM_DIR

POM = {"m": "http://maven.apache.org/POM/4.0.0"}


def declared(name: str, artifact: str) -> str:
    root = ET.parse(JVM_DIR / name / "pom.xml").getroot()
    for dep in root.iterfind("m:dependencies/m:dependency", POM):
        if dep.findtext("m:artifactId", namespaces=POM) == artifact:
            return str(dep.findtext("m:version", namespaces=POM))
    raise AssertionError(f"jvm/{name}/pom.xml declares no {artifact}")


def test_hadoop_aws_is_the_hadoop_version_pyspark_ships():
    jars = Path(pyspark.__file__).parent / "jars"
    shipped = [p.name for p in jars.glob("hadoop-client-api-*.jar")]
    assert len(shipped) == 1, shipped
    version = shipped[0].removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert declared("s3", "hadoop-aws") == version
