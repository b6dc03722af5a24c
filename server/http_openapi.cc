#include "server/http_openapi.h"

namespace cops {

// Kept by hand beside server/http_api.cc: a route or field added there is added here.
// What several operations share (the query parameters and the document body of the POSTs,
// the error response) is written once under components and $ref'd.
std::string_view OpenApiJson() {
  static constexpr std::string_view kDocument = R"json(
{
 "openapi": "3.0.3",
 "info": {
  "title": "COPS HTTP API",
  "version": "1.0.0",
  "description": "Register documents and check new ones for copies (docs/api.md). Errors are {\"code\", \"message\"} with the gRPC canonical code name.",
  "license": {
   "name": "See the COPS repository"
  }
 },
 "servers": [
  {
   "url": "http://127.0.0.1:7412"
  }
 ],
 "security": [
  {
   "bearer": []
  }
 ],
 "paths": {
  "/healthz": {
   "get": {
    "operationId": "health",
    "summary": "Whether copsd serves",
    "security": [],
    "responses": {
     "200": {
      "description": "Serving",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "properties": {
          "status": {
           "type": "string"
          }
         }
        }
       }
      }
     },
     "503": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/v1/openapi.json": {
   "get": {
    "operationId": "openapi",
    "summary": "This description",
    "security": [],
    "responses": {
     "200": {
      "description": "OpenAPI 3 document",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "additionalProperties": true
        }
       }
      }
     }
    }
   }
  },
  "/v1/documents": {
   "post": {
    "operationId": "registerDocument",
    "summary": "Register a document",
    "parameters": [
     {
      "name": "title",
      "in": "query",
      "required": false,
      "description": "Title of the document",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "author",
      "in": "query",
      "required": false,
      "description": "Author",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "collection",
      "in": "query",
      "required": false,
      "description": "Collection to register into (created when new)",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "external_id",
      "in": "query",
      "required": false,
      "description": "Your identifier; the same id in the same collection returns the first document",
      "schema": {
       "type": "string"
      }
     },
     {
      "$ref": "#/components/parameters/Format"
     },
     {
      "$ref": "#/components/parameters/IdempotencyKey"
     }
    ],
    "requestBody": {
     "$ref": "#/components/requestBodies/Document"
    },
    "responses": {
     "201": {
      "description": "Registered (the `cops --json register` object with its signed receipt)",
      "headers": {
       "Location": {
        "schema": {
         "type": "string"
        }
       }
      },
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Registration"
        }
       }
      }
     },
     "200": {
      "description": "Already registered (same external_id or same text)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Registration"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "403": {
      "$ref": "#/components/responses/Error"
     },
     "409": {
      "$ref": "#/components/responses/Error"
     },
     "411": {
      "$ref": "#/components/responses/Error"
     },
     "413": {
      "$ref": "#/components/responses/Error"
     },
     "415": {
      "$ref": "#/components/responses/Error"
     },
     "422": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     },
     "503": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "get": {
    "operationId": "listDocuments",
    "summary": "List documents, in id order",
    "parameters": [
     {
      "name": "page_token",
      "in": "query",
      "required": false,
      "description": "next_page_token of the previous page",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "page_size",
      "in": "query",
      "required": false,
      "description": "Documents per page (default 100, at most 1000)",
      "schema": {
       "type": "integer",
       "minimum": 0
      }
     },
     {
      "name": "collection",
      "in": "query",
      "required": false,
      "description": "Only this collection",
      "schema": {
       "type": "string"
      }
     }
    ],
    "responses": {
     "200": {
      "description": "One page",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "documents",
          "next_page_token"
         ],
         "properties": {
          "documents": {
           "type": "array",
           "items": {
            "$ref": "#/components/schemas/DocumentInfo"
           }
          },
          "next_page_token": {
           "type": "string"
          }
         }
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "403": {
      "$ref": "#/components/responses/Error"
     },
     "404": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/v1/documents/{id}": {
   "parameters": [
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "integer",
      "minimum": 1
     }
    }
   ],
   "get": {
    "operationId": "getDocument",
    "summary": "A document's record",
    "responses": {
     "200": {
      "description": "The record",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/DocumentInfo"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "403": {
      "$ref": "#/components/responses/Error"
     },
     "404": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "delete": {
    "operationId": "deleteDocument",
    "summary": "Unregister a document",
    "responses": {
     "204": {
      "description": "Removed"
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "403": {
      "$ref": "#/components/responses/Error"
     },
     "404": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/v1/checks": {
   "post": {
    "operationId": "checkDocument",
    "summary": "Check a document (synchronous)",
    "parameters": [
     {
      "$ref": "#/components/parameters/CheckCollection"
     },
     {
      "$ref": "#/components/parameters/Format"
     },
     {
      "$ref": "#/components/parameters/Function"
     },
     {
      "$ref": "#/components/parameters/Threshold"
     },
     {
      "$ref": "#/components/parameters/MinCount"
     },
     {
      "$ref": "#/components/parameters/MaxResults"
     },
     {
      "$ref": "#/components/parameters/WantSpans"
     },
     {
      "$ref": "#/components/parameters/MaxDocFrequency"
     },
     {
      "$ref": "#/components/parameters/MinPassageUnits"
     },
     {
      "$ref": "#/components/parameters/ExcludeQuotes"
     },
     {
      "$ref": "#/components/parameters/ExcludeReferences"
     },
     {
      "$ref": "#/components/parameters/MinMatchUnits"
     },
     {
      "$ref": "#/components/parameters/SampleSize"
     },
     {
      "$ref": "#/components/parameters/SampleSeed"
     },
     {
      "$ref": "#/components/parameters/CheckTitle"
     },
     {
      "$ref": "#/components/parameters/IdempotencyKey"
     }
    ],
    "requestBody": {
     "$ref": "#/components/requestBodies/Document"
    },
    "responses": {
     "200": {
      "description": "The `cops --json check` object, or the HTML report with Accept: text/html",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/CheckReport"
        }
       },
       "text/html": {
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "403": {
      "$ref": "#/components/responses/Error"
     },
     "404": {
      "$ref": "#/components/responses/Error"
     },
     "409": {
      "$ref": "#/components/responses/Error"
     },
     "411": {
      "$ref": "#/components/responses/Error"
     },
     "413": {
      "$ref": "#/components/responses/Error"
     },
     "415": {
      "$ref": "#/components/responses/Error"
     },
     "422": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     },
     "503": {
      "$ref": "#/components/responses/Error"
     },
     "504": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/v1/jobs": {
   "post": {
    "operationId": "submitJob",
    "summary": "Check one document, or compare a batch (several multipart 'file' parts), asynchronously",
    "parameters": [
     {
      "$ref": "#/components/parameters/CheckCollection"
     },
     {
      "$ref": "#/components/parameters/Format"
     },
     {
      "$ref": "#/components/parameters/Function"
     },
     {
      "$ref": "#/components/parameters/Threshold"
     },
     {
      "$ref": "#/components/parameters/MinCount"
     },
     {
      "$ref": "#/components/parameters/MaxResults"
     },
     {
      "$ref": "#/components/parameters/WantSpans"
     },
     {
      "$ref": "#/components/parameters/MaxDocFrequency"
     },
     {
      "$ref": "#/components/parameters/MinPassageUnits"
     },
     {
      "$ref": "#/components/parameters/ExcludeQuotes"
     },
     {
      "$ref": "#/components/parameters/ExcludeReferences"
     },
     {
      "$ref": "#/components/parameters/MinMatchUnits"
     },
     {
      "$ref": "#/components/parameters/SampleSize"
     },
     {
      "$ref": "#/components/parameters/SampleSeed"
     },
     {
      "$ref": "#/components/parameters/CheckTitle"
     },
     {
      "$ref": "#/components/parameters/IdempotencyKey"
     }
    ],
    "requestBody": {
     "$ref": "#/components/requestBodies/Document"
    },
    "responses": {
     "202": {
      "description": "Queued",
      "headers": {
       "Location": {
        "schema": {
         "type": "string"
        }
       }
      },
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      }
     },
     "400": {
      "$ref": "#/components/responses/Error"
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "409": {
      "$ref": "#/components/responses/Error"
     },
     "411": {
      "$ref": "#/components/responses/Error"
     },
     "413": {
      "$ref": "#/components/responses/Error"
     },
     "415": {
      "$ref": "#/components/responses/Error"
     },
     "422": {
      "$ref": "#/components/responses/Error"
     },
     "429": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/v1/jobs/{id}": {
   "get": {
    "operationId": "getJob",
    "summary": "A job's state, and its result when done",
    "parameters": [
     {
      "name": "id",
      "in": "path",
      "required": true,
      "schema": {
       "type": "string"
      }
     }
    ],
    "responses": {
     "200": {
      "description": "The job",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Error"
     },
     "404": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  }
 },
 "components": {
  "securitySchemes": {
   "bearer": {
    "type": "http",
    "scheme": "bearer",
    "description": "A COPS API key (cops admin create-principal)"
   }
  },
  "parameters": {
   "CheckCollection": {
    "name": "collection",
    "in": "query",
    "required": false,
    "description": "Collection to search (repeat for several; default all you may use)",
    "schema": {
     "type": "array",
     "items": {
      "type": "string"
     }
    },
    "style": "form",
    "explode": true
   },
   "Format": {
    "name": "format",
    "in": "query",
    "required": false,
    "description": "auto, text, html, email, pdf, docx, odt, latex or markdown (default: from Content-Type)",
    "schema": {
     "type": "string"
    }
   },
   "Function": {
    "name": "function",
    "in": "query",
    "required": false,
    "description": "match_ratio, containment, match_count or ordered_matches",
    "schema": {
     "type": "string"
    }
   },
   "Threshold": {
    "name": "threshold",
    "in": "query",
    "required": false,
    "description": "Decision threshold in (0, 1]",
    "schema": {
     "type": "number"
    }
   },
   "MinCount": {
    "name": "min_count",
    "in": "query",
    "required": false,
    "description": "For match_count and ordered_matches",
    "schema": {
     "type": "integer",
     "minimum": 1
    }
   },
   "MaxResults": {
    "name": "max_results",
    "in": "query",
    "required": false,
    "description": "Matches returned, 0 = all",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "WantSpans": {
    "name": "want_spans",
    "in": "query",
    "required": false,
    "description": "Report matched passages",
    "schema": {
     "type": "boolean"
    }
   },
   "MaxDocFrequency": {
    "name": "max_doc_frequency",
    "in": "query",
    "required": false,
    "description": "Ignore chunks found in more documents than this",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "MinPassageUnits": {
    "name": "min_passage_units",
    "in": "query",
    "required": false,
    "description": "Shortest shared passage reported, words",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "ExcludeQuotes": {
    "name": "exclude_quotes",
    "in": "query",
    "required": false,
    "description": "Quoted passages do not count",
    "schema": {
     "type": "boolean"
    }
   },
   "ExcludeReferences": {
    "name": "exclude_references",
    "in": "query",
    "required": false,
    "description": "The references section does not count",
    "schema": {
     "type": "boolean"
    }
   },
   "MinMatchUnits": {
    "name": "min_match_units",
    "in": "query",
    "required": false,
    "description": "Matched passages shorter than this many words do not count",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "SampleSize": {
    "name": "sample_size",
    "in": "query",
    "required": false,
    "description": "Look up only this many chunks (0 = all)",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "SampleSeed": {
    "name": "sample_seed",
    "in": "query",
    "required": false,
    "description": "Seed of the sample",
    "schema": {
     "type": "integer",
     "minimum": 0
    }
   },
   "CheckTitle": {
    "name": "title",
    "in": "query",
    "required": false,
    "description": "Name of the document in the report",
    "schema": {
     "type": "string"
    }
   },
   "IdempotencyKey": {
    "name": "Idempotency-Key",
    "in": "header",
    "required": false,
    "description": "A retried request with the same key gets the first reply; the work is not done twice",
    "schema": {
     "type": "string"
    }
   }
  },
  "requestBodies": {
   "Document": {
    "required": true,
    "content": {
     "text/plain": {
      "schema": {
       "type": "string"
      }
     },
     "text/html": {
      "schema": {
       "type": "string"
      }
     },
     "text/markdown": {
      "schema": {
       "type": "string"
      }
     },
     "application/pdf": {
      "schema": {
       "type": "string",
       "format": "binary"
      }
     },
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document": {
      "schema": {
       "type": "string",
       "format": "binary"
      }
     },
     "application/vnd.oasis.opendocument.text": {
      "schema": {
       "type": "string",
       "format": "binary"
      }
     },
     "message/rfc822": {
      "schema": {
       "type": "string"
      }
     },
     "application/x-latex": {
      "schema": {
       "type": "string"
      }
     },
     "application/octet-stream": {
      "schema": {
       "type": "string",
       "format": "binary"
      }
     },
     "multipart/form-data": {
      "schema": {
       "$ref": "#/components/schemas/Upload"
      }
     },
     "application/json": {
      "schema": {
       "$ref": "#/components/schemas/JsonDocument"
      }
     }
    }
   }
  },
  "responses": {
   "Error": {
    "description": "An error",
    "content": {
     "application/json": {
      "schema": {
       "$ref": "#/components/schemas/Error"
      }
     }
    }
   }
  },
  "schemas": {
   "Error": {
    "type": "object",
    "required": [
     "code",
     "message"
    ],
    "properties": {
     "code": {
      "type": "string",
      "description": "gRPC canonical code name, e.g. NOT_FOUND"
     },
     "message": {
      "type": "string"
     }
    }
   },
   "Upload": {
    "type": "object",
    "required": [
     "file"
    ],
    "properties": {
     "file": {
      "type": "string",
      "format": "binary",
      "description": "The document (several for a batch job)"
     },
     "title": {
      "type": "string"
     },
     "author": {
      "type": "string"
     },
     "collection": {
      "type": "string"
     },
     "external_id": {
      "type": "string"
     },
     "format": {
      "type": "string"
     }
    },
    "additionalProperties": {
     "type": "string"
    }
   },
   "JsonDocument": {
    "type": "object",
    "additionalProperties": false,
    "description": "The document in exactly one of content (text) or content_base64; the other members are the route's query parameters",
    "properties": {
     "content": {
      "type": "string"
     },
     "content_base64": {
      "type": "string",
      "format": "byte"
     },
     "title": {
      "type": "string"
     },
     "author": {
      "type": "string"
     },
     "collection": {
      "oneOf": [
       {
        "type": "string"
       },
       {
        "type": "array",
        "items": {
         "type": "string"
        }
       }
      ]
     },
     "external_id": {
      "type": "string"
     },
     "format": {
      "type": "string"
     },
     "function": {
      "type": "string"
     },
     "threshold": {
      "type": "number"
     },
     "min_count": {
      "type": "integer"
     },
     "max_results": {
      "type": "integer"
     },
     "want_spans": {
      "type": "boolean"
     },
     "max_doc_frequency": {
      "type": "integer"
     },
     "min_passage_units": {
      "type": "integer"
     },
     "exclude_quotes": {
      "type": "boolean"
     },
     "exclude_references": {
      "type": "boolean"
     },
     "min_match_units": {
      "type": "integer"
     },
     "sample_size": {
      "type": "integer"
     },
     "sample_seed": {
      "type": "integer"
     }
    }
   },
   "Registration": {
    "type": "object",
    "required": [
     "doc_id",
     "created"
    ],
    "properties": {
     "doc_id": {
      "type": "integer"
     },
     "path": {
      "type": "string"
     },
     "chunks": {
      "type": "integer"
     },
     "stored_chunks": {
      "type": "integer"
     },
     "duplicate_of": {
      "type": "integer",
      "nullable": true
     },
     "created": {
      "type": "boolean"
     },
     "format": {
      "type": "string"
     },
     "charset": {
      "type": "string"
     },
     "receipt": {
      "type": "object",
      "description": "Signed receipt (docs/receipts.md)",
      "additionalProperties": true
     }
    }
   },
   "DocumentInfo": {
    "type": "object",
    "required": [
     "doc_id"
    ],
    "properties": {
     "doc_id": {
      "type": "integer"
     },
     "title": {
      "type": "string"
     },
     "author": {
      "type": "string"
     },
     "owner": {
      "type": "string"
     },
     "collection": {
      "type": "string"
     },
     "external_id": {
      "type": "string"
     },
     "format": {
      "type": "string"
     },
     "registered_unix_micros": {
      "type": "integer"
     },
     "sha256": {
      "type": "string"
     },
     "chunks": {
      "type": "integer"
     },
     "stored_chunks": {
      "type": "integer"
     },
     "size_bytes": {
      "type": "integer"
     },
     "expires_unix_micros": {
      "type": "integer"
     },
     "not_before_unix_micros": {
      "type": "integer"
     }
    }
   },
   "CheckReport": {
    "type": "object",
    "required": [
     "violation",
     "matches"
    ],
    "description": "The `cops --json check` object (docs/reports.md)",
    "properties": {
     "violation": {
      "type": "boolean"
     },
     "chunks": {
      "type": "integer"
     },
     "matches": {
      "type": "array",
      "items": {
       "type": "object",
       "additionalProperties": true
      }
     },
     "excluded": {
      "type": "array",
      "items": {
       "type": "object",
       "additionalProperties": true
      }
     },
     "params": {
      "type": "object",
      "additionalProperties": true
     }
    },
    "additionalProperties": true
   },
   "Job": {
    "type": "object",
    "required": [
     "id",
     "state"
    ],
    "properties": {
     "id": {
      "type": "string"
     },
     "state": {
      "type": "string",
      "enum": [
       "queued",
       "running",
       "done",
       "failed"
      ]
     },
     "created_unix_micros": {
      "type": "integer"
     },
     "finished_unix_micros": {
      "type": "integer"
     },
     "result": {
      "type": "object",
      "additionalProperties": true,
      "description": "When done: the `cops --json check` object, or for a batch the `cops --json compare` object"
     },
     "error": {
      "$ref": "#/components/schemas/Error"
     }
    }
   }
  }
 }
}

)json";
  return kDocument;
}

}  // namespace cops
